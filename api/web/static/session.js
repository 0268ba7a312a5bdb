// Signing in: with a key typed in, or from a sign-in link, which a signed-in tab never takes
// without asking; and signing out, which leaves nothing of one key's session to the next.

import {
  $,
  KEY_SLOT,
  json,
  key,
  listsDocuments,
  mayWrite,
  me,
  refusal,
  say,
  signedInAs,
  whenRevoked,
} from "./shared.js";
import { forgetConversation } from "./ask.js";
import { forgetDocuments, loadDocuments } from "./documents.js";
import { forgetReindex } from "./reindex.js";
import { forgetSearch } from "./search.js";
import { closeChunk } from "./source.js";
import { selectTab } from "./tabs.js";
import { forgetUploads } from "./uploads.js";

export function takeLinkFromAddress() {
  // A sign-in link carries a one-time code (#code=, what `make run` prints) or a key
  // (#key=) in the fragment, which never reaches a server or its logs.  Either is wiped
  // from the address bar and the history at once, before anything else happens, and
  // held in memory only: it becomes the tab's key when the person agrees, never before.
  const fragment = new URLSearchParams(location.hash.slice(1));
  const code = fragment.get("code");
  const given = fragment.get("key");
  if (location.hash) history.replaceState(null, "", location.pathname + location.search);
  if (code) return { code };
  if (given) return { key: given };
  return null;
}

export async function signIn(candidate) {
  sessionStorage.setItem(KEY_SLOT, candidate);
  try {
    signedInAs(await json("GET", "/v1/key"));
  } catch (error) {
    // Only a refusal forgets the key; an outage keeps it for the next try.
    if (error.status === 401 || error.status === 403) sessionStorage.removeItem(KEY_SLOT);
    showSignIn(error.status ? refusal(error) : "The server could not be reached; try again.");
    return;
  }
  showApp();
}

// ------------------------------------------------------------------ sign-in links

// A key a link offered, waiting for the person to take it or not: { key, info }.
let offered = null;

// A key, described for the person deciding whether to use it: whose documents it
// reads and writes, with which role.  Everything here came from GET /v1/key.
function whose(info) {
  const parts = [`namespace ${info.namespace}`, `${info.role} key ${info.key_id}`];
  parts.push(info.principals ? `reads for ${info.principals.join(", ")}` : "reads the whole namespace");
  if (info.restricted) {
    if (info.restricted.subject) parts.push(`issued to ${info.restricted.subject}`);
    parts.push(`restricted until ${new Date(info.restricted.expires_at).toLocaleString()}`);
  }
  return parts.join(", ");
}

async function exchangeCode(code) {
  // No key goes with it: the code is the credential, and is spent by this call.
  return json("POST", "/v1/sign-in", { code }, null);
}

export async function followLink(link) {
  let candidate = link.key;
  if (link.code) {
    try {
      candidate = (await exchangeCode(link.code)).key;
    } catch (error) {
      linkRefused(error.status ? `The sign-in link did not work: ${error.message}` : "The server could not be reached to use the sign-in link; open the link again.");
      return;
    }
  }
  let info;
  try {
    info = await json("GET", "/v1/key", undefined, candidate);
  } catch (error) {
    linkRefused(error.status === 401 ? "The sign-in link's key was refused: it is not valid or has been revoked." : `The sign-in link's key could not be checked: ${error.message}`);
    return;
  }
  if (!key()) {
    takeKey(candidate, info, true);
    return;
  }
  if (candidate === key()) return; // the same key: nothing to decide
  offer(candidate, info);
}

function linkRefused(message) {
  // A tab already signed in stays so, and says what became of the link.
  if (key() && me) say("link-notice", `${message} You are still signed in as before.`, true);
  else showSignIn(message);
}

function offer(candidate, info) {
  offered = { key: candidate, info };
  $("offer-now").textContent = me ? `This tab is signed in with: ${whose(me)}.` : "This tab is signed in with another key.";
  $("offer-new").textContent = `The link offers: ${whose(info)}.`;
  const dialog = $("offer");
  if (!dialog.open) dialog.showModal();
  // Keeping the current sign-in is the safe choice, so it has the focus.
  $("offer-keep").focus();
}

function keepCurrent() {
  offered = null;
  $("offer").close();
  say("link-notice", "The sign-in link's key was not used: you are still signed in as before.");
}

function switchToOffered() {
  const chosen = offered;
  offered = null;
  $("offer").close();
  if (chosen) takeKey(chosen.key, chosen.info, true);
}

function takeKey(candidate, info, fromLink) {
  clearSession();
  sessionStorage.setItem(KEY_SLOT, candidate);
  signedInAs(info);
  showApp();
  // Whoever opened the link is told whose key the tab now uses, in words.
  if (fromLink) say("link-notice", `Signed in from a link with: ${whose(info)}. Not the key you meant to use? Sign out.`);
}

export function showSignIn(message) {
  $("app").hidden = true;
  $("sign-out").hidden = true;
  $("who").hidden = true;
  $("sign-in").hidden = false;
  say("sign-in-message", message, Boolean(message));
  $("key").focus();
}

function describeKey() {
  const parts = [`Signed in to ${me.namespace}`];
  // Whose documents an upload is for: the bar says it at all times.
  if (me.principals) parts.push(`as ${me.principals.join(", ")}`);
  if (!mayWrite()) parts.push("read-only");
  if (me.restricted) {
    const until = new Date(me.restricted.expires_at);
    parts.push(`restricted key until ${until.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" })}`);
  }
  return parts.join(" · ");
}

function showApp() {
  $("sign-in").hidden = true;
  $("app").hidden = false;
  $("sign-out").hidden = false;
  $("who").hidden = false;
  $("who").textContent = describeKey();
  // A read-only key is offered nothing it would be refused: no uploads, deletions or
  // changes of readers; a restricted key no re-index status (never its business).
  $("drop").hidden = !mayWrite();
  $("uploads-title").hidden = !mayWrite();
  $("tab-documents").hidden = !listsDocuments();
  $("tab-reindex").hidden = Boolean(me.restricted);
  if (listsDocuments()) {
    loadDocuments(null);
    selectTab("documents", true);
  } else {
    selectTab("ask", true);
  }
}

// Nothing of one key's session may reach the next key: conversation, lists, results.
function clearSession() {
  sessionStorage.removeItem(KEY_SLOT);
  signedInAs(null);
  forgetUploads();
  forgetDocuments();
  forgetConversation();
  forgetSearch();
  forgetReindex();
  say("link-notice", "");
  closeChunk();
  selectTab("documents", false);
}

function signOut(message) {
  clearSession();
  showSignIn(typeof message === "string" ? message : "");
}

export function wireSession() {
  whenRevoked(signOut);
  $("sign-in-form").addEventListener("submit", (event) => {
    event.preventDefault();
    signIn($("key").value.trim());
    $("key").value = "";
  });
  $("sign-out").addEventListener("click", signOut);
  $("offer-keep").addEventListener("click", keepCurrent);
  $("offer-switch").addEventListener("click", switchToOffered);
  // Escape closes the question: that keeps the current sign-in too.
  $("offer").addEventListener("cancel", (event) => {
    event.preventDefault();
    keepCurrent();
  });
  // A sign-in link opened while the page is already open changes only the fragment.
  window.addEventListener("hashchange", () => {
    const next = takeLinkFromAddress();
    if (next) followLink(next);
  });
}
