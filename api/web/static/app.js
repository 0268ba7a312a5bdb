// ragsage's page: plain JavaScript, no build step, nothing inline (the Content-Security-Policy
// allows scripts from this origin only).  One module a screen, as native ES modules: the
// server serves each by name (api/web/__init__.py), so a new one is added there too.

import { key } from "./shared.js";
import { wireAsk } from "./ask.js";
import { wireDocuments } from "./documents.js";
import { wireReindex } from "./reindex.js";
import { wireSearch } from "./search.js";
import { followLink, showSignIn, signIn, takeLinkFromAddress, wireSession } from "./session.js";
import { wireSource } from "./source.js";
import { wireTabs } from "./tabs.js";
import { wireUploads } from "./uploads.js";

async function start() {
  const link = takeLinkFromAddress();
  wireSession();
  wireTabs();
  wireUploads();
  wireDocuments();
  wireAsk();
  wireSearch();
  wireReindex();
  wireSource();
  // The tab's own key first, so that a link is weighed against what it would replace.
  if (key()) await signIn(key());
  if (link) await followLink(link);
  else if (!key()) showSignIn("");
}

start();
