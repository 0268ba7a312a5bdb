// ragsage's page: plain JavaScript, no build step, nothing inline (the Content-Security-Policy
// allows scripts from this origin only).  Text that came from a document is only ever put in
// the page as text (textContent, text nodes), never parsed as HTML.
"use strict";

const KEY_SLOT = "ragsage.key";
const POLL_MS = 700;
const PAGE_SIZE = 20;
const MAX_HISTORY = 50; // the API's limit on a conversation's turns

const $ = (id) => document.getElementById(id);

function element(tag, text, className) {
  const node = document.createElement(tag);
  if (text !== undefined && text !== null) node.textContent = String(text);
  if (className) node.className = className;
  return node;
}

function button(label, onClick, className) {
  const node = element("button", label, className);
  node.type = "button";
  node.addEventListener("click", onClick);
  return node;
}

// ------------------------------------------------------------------ the API

class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

function key() {
  return sessionStorage.getItem(KEY_SLOT);
}

// ``as`` names the key to send, for a request made before a key is taken (the
// question "whose key is this?"); by default the tab's own, and none at all for null.
async function call(method, path, body, extra, as = key()) {
  const headers = as ? { Authorization: `Bearer ${as}` } : {};
  let payload;
  if (body instanceof FormData) {
    payload = body;
  } else if (body !== undefined) {
    headers["Content-Type"] = "application/json";
    payload = JSON.stringify(body);
  }
  const response = await fetch(path, { method, headers, body: payload, ...extra });
  if (!response.ok) throw new ApiError(response.status, await errorText(response));
  return response;
}

async function errorText(response) {
  try {
    const data = await response.json();
    if (data && data.error && data.error.message) return data.error.message;
  } catch (ignored) {
    // not JSON: fall through to the status line
  }
  return `${response.status} ${response.statusText}`;
}

async function json(method, path, body, as = key()) {
  return (await call(method, path, body, undefined, as)).json();
}

function refusal(error) {
  if (error.status === 401) return "The API key was refused: it is not valid or has been revoked.";
  if (error.status === 403) return `This key lacks the role for that: ${error.message}`;
  return error.message;
}

function say(id, text, bad) {
  const node = $(id);
  node.textContent = text || "";
  node.classList.toggle("bad", Boolean(bad));
}

// ------------------------------------------------------------------ signing in

function takeLinkFromAddress() {
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

// What the signed-in key is (GET /v1/key): its namespace, role, and whether it is a
// restricted key, which decides what the page offers.
let me = null;

function mayWrite() {
  return Boolean(me) && me.role !== "read";
}

function listsDocuments() {
  // A restricted key with filters may only search and ask (the API refuses the rest).
  return Boolean(me) && !(me.restricted && me.restricted.filters);
}

async function signIn(candidate) {
  sessionStorage.setItem(KEY_SLOT, candidate);
  try {
    me = await json("GET", "/v1/key");
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

async function followLink(link) {
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
  me = info;
  showApp();
  // Whoever opened the link is told whose key the tab now uses, in words.
  if (fromLink) say("link-notice", `Signed in from a link with: ${whose(info)}. Not the key you meant to use? Sign out.`);
}

function showSignIn(message) {
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
  me = null;
  stopPolling();
  watched.clear();
  history_ = [];
  cursors.length = 1;
  activeFilter = "";
  $("filter").value = "";
  for (const id of ["uploads", "conversation", "results"]) $(id).replaceChildren();
  for (const id of ["documents", "jobs", "generations"]) $(id).tBodies[0].replaceChildren();
  for (const id of ["documents-message", "ask-message", "search-message", "reindex-message", "link-notice"]) say(id, "");
  closeChunk();
  selectTab("documents", false);
}

function signOut(message) {
  clearSession();
  showSignIn(typeof message === "string" ? message : "");
}

function refused(error) {
  // A key revoked or expired mid-session: back to the sign-in, saying why.
  if (error.status === 401) {
    signOut(refusal(error));
    return true;
  }
  return false;
}

// ------------------------------------------------------------------ tabs

const TABS = ["documents", "ask", "search", "reindex"];

function selectTab(name, focus) {
  for (const tab of TABS) {
    const chosen = tab === name;
    const control = $(`tab-${tab}`);
    control.setAttribute("aria-selected", String(chosen));
    control.tabIndex = chosen ? 0 : -1;
    $(`panel-${tab}`).hidden = !chosen;
    if (chosen && focus) control.focus();
  }
  if (!key()) return;
  if (name === "reindex") loadReindex();
  if (name === "documents") loadJobs();
}

function tabKeys(event) {
  const shown = TABS.filter((tab) => !$(`tab-${tab}`).hidden);
  const index = shown.indexOf(event.target.id.replace("tab-", ""));
  if (index < 0) return;
  let next = null;
  if (event.key === "ArrowRight") next = (index + 1) % shown.length;
  if (event.key === "ArrowLeft") next = (index + shown.length - 1) % shown.length;
  if (event.key === "Home") next = 0;
  if (event.key === "End") next = shown.length - 1;
  if (next !== null) {
    event.preventDefault();
    selectTab(shown[next], true);
  }
}

// ------------------------------------------------------------------ uploads and jobs

const watched = new Map(); // job id -> list item
let pollTimer = null;

function stopPolling() {
  if (pollTimer) clearTimeout(pollTimer);
  pollTimer = null;
}

// A drop of more files than this is a batch: its jobs wait as bulk work, so a
// single file dropped later (or by someone else in the namespace) goes first.
const BATCH_FILES = 5;

function uploadAll(pairs) {
  const jobClass = pairs.length > BATCH_FILES ? "bulk" : "interactive";
  for (const [file, path] of pairs) upload(file, path, jobClass);
}

async function upload(file, path, jobClass = "interactive") {
  const item = element("li");
  const name = element("strong", path || file.name);
  const state = element("span", " — uploading…");
  item.append(name, state);
  $("uploads").prepend(item);
  const form = new FormData();
  form.append("file", file, (path || file.name).split("/").pop());
  if (path && path !== file.name) form.append("metadata", JSON.stringify({ path }));
  form.append("job_class", jobClass);
  try {
    const outcome = await json("POST", "/v1/documents", form);
    if (outcome.duplicate) {
      state.textContent = " — already in the knowledge base";
      state.className = "state-succeeded";
      return;
    }
    state.textContent = ` — ${outcome.state}`;
    if (outcome.job_id) {
      item.dataset.job = outcome.job_id;
      watched.set(outcome.job_id, state);
      schedulePoll();
    }
  } catch (error) {
    state.textContent = ` — upload failed: ${refusal(error)}`;
    state.className = "state-failed";
  }
}

function describeJob(job) {
  if (job.state === "running") {
    const progress = job.progress;
    const counted =
      job.stage && progress && progress.total
        ? ` ${progress.done.toLocaleString()} of ${progress.total.toLocaleString()} chunks`
        : "";
    return `running${job.stage ? ` (${job.stage}${counted})` : ""}`;
  }
  if (job.state === "succeeded") {
    const chunks = job.result && job.result.chunks;
    return chunks !== undefined ? `succeeded: ${chunks} chunks` : "succeeded";
  }
  if (job.state === "failed") return `failed: ${job.error || "no reason given"}`;
  return job.state;
}

function schedulePoll() {
  if (!pollTimer) pollTimer = setTimeout(pollJobs, POLL_MS);
}

async function pollJobs() {
  let ended = false;
  await Promise.all(
    [...watched].map(async ([id, state]) => {
      try {
        const job = await json("GET", `/v1/jobs/${encodeURIComponent(id)}`);
        const text = ` — ${describeJob(job)}`;
        if (state.textContent !== text) {
          state.textContent = text;
          state.className = `state-${job.state}`;
        }
        if (["succeeded", "failed", "cancelled", "superseded"].includes(job.state)) {
          watched.delete(id);
          ended = true;
        }
      } catch (error) {
        if (refused(error)) return;
        if (error.status === 404) {
          state.textContent = " — gone (the document was deleted)";
          watched.delete(id);
        }
        // Anything else (an outage, a timeout) is tried again next round.
      }
    }),
  );
  pollTimer = null;
  if (ended) {
    loadDocuments(currentCursor());
    loadJobs();
  }
  if (watched.size && key()) schedulePoll();
}

async function loadJobs() {
  if (!key()) return;
  const body = $("jobs").tBodies[0];
  try {
    const page = await json("GET", "/v1/jobs?limit=20");
    body.replaceChildren(
      ...page.jobs.map((job) => {
        const row = element("tr");
        const actions = element("td");
        if (!mayWrite()) {
          // read-only: no retry or cancel to offer
        } else if (job.state === "failed" || job.state === "cancelled") {
          actions.append(button("Retry", () => jobAction(job.id, "retry"), "secondary"));
        }
        if (mayWrite() && (job.state === "queued" || job.state === "running")) {
          actions.append(button("Cancel", () => jobAction(job.id, "cancel"), "secondary"));
        }
        row.append(
          element("td", job.filename),
          element("td", job.state, `state-${job.state}`),
          element("td", describeJob(job)),
          actions,
        );
        return row;
      }),
    );
  } catch (error) {
    if (!refused(error)) say("documents-message", refusal(error), true);
  }
}

async function jobAction(id, action) {
  try {
    const job = await json("POST", `/v1/jobs/${encodeURIComponent(id)}/${action}`);
    say("documents-message", `${job.filename}: ${describeJob(job)}`);
    if (action === "retry") {
      const item = element("li");
      const state = element("span", ` — ${describeJob(job)}`);
      item.append(element("strong", job.filename), state);
      $("uploads").prepend(item);
      watched.set(job.id, state);
      schedulePoll();
    }
  } catch (error) {
    if (refused(error)) return;
    say("documents-message", refusal(error), true);
  }
  loadJobs();
}

// Files dropped as a folder arrive as directory entries: walk them.
async function entries(entry, prefix) {
  if (entry.isFile) {
    const file = await new Promise((resolve, reject) => entry.file(resolve, reject));
    return [[file, prefix + file.name]];
  }
  const reader = entry.createReader();
  const found = [];
  for (;;) {
    const batch = await new Promise((resolve, reject) => reader.readEntries(resolve, reject));
    if (!batch.length) break;
    for (const child of batch) found.push(...(await entries(child, `${prefix}${entry.name}/`)));
  }
  return found;
}

async function dropped(event) {
  event.preventDefault();
  $("drop").classList.remove("over");
  const items = [...event.dataTransfer.items].map((item) =>
    item.webkitGetAsEntry ? item.webkitGetAsEntry() : null,
  );
  if (items.some((entry) => entry)) {
    const pairs = [];
    for (const entry of items.filter(Boolean)) pairs.push(...(await entries(entry, "")));
    uploadAll(pairs);
  } else {
    uploadAll([...event.dataTransfer.files].map((file) => [file, file.name]));
  }
}

// ------------------------------------------------------------------ the document list

const cursors = [null]; // the cursor of each page shown so far
let activeFilter = ""; // the name filter last submitted (not what is being typed)
let listRequest = 0; // only the latest list request may draw the table

function currentCursor() {
  return cursors[cursors.length - 1];
}

async function loadDocuments(cursor) {
  const params = new URLSearchParams({ limit: String(PAGE_SIZE) });
  const name = activeFilter;
  if (name) params.set("name", name);
  if (cursor) params.set("cursor", cursor);
  const mine = ++listRequest;
  $("next-page").disabled = true;
  try {
    const page = await json("GET", `/v1/documents?${params}`);
    if (mine !== listRequest) return;
    const body = $("documents").tBodies[0];
    body.replaceChildren(...page.documents.map(documentRow));
    say(
      "documents-message",
      page.documents.length ? "" : name ? `No document's name holds “${name}”.` : "No documents yet.",
    );
    $("next-page").disabled = !page.next_cursor;
    $("next-page").dataset.cursor = page.next_cursor || "";
    $("prev-page").disabled = cursors.length <= 1;
  } catch (error) {
    if (mine === listRequest && !refused(error)) say("documents-message", refusal(error), true);
  }
}

function documentRow(doc) {
  const row = element("tr");
  const status = element("td", doc.status, `state-${doc.status}`);
  if (doc.error) status.append(element("div", doc.error));
  const size = doc.size_bytes === null ? "" : `${Math.max(1, Math.round(doc.size_bytes / 1024))} KB`;
  const actions = element("td");
  if (mayWrite()) {
    actions.append(button(`Delete ${doc.filename || doc.title}`, () => removeDocument(doc), "secondary"));
  }
  const readers = element("td", null, "readers");
  showReaders(readers, doc);
  row.append(
    element("td", doc.filename || doc.title),
    status,
    element("td", size),
    element("td", new Date(doc.created_at).toLocaleString()),
    readers,
    actions,
  );
  return row;
}

// Who may read a document: its access list, or everyone in the namespace when it has none.
function showReaders(cell, doc) {
  const name = doc.filename || doc.title;
  const list = element("span", doc.access.length ? doc.access.join(", ") : "Everyone");
  if (!mayWrite()) {
    cell.replaceChildren(list);
    return;
  }
  cell.replaceChildren(list, " ", button(`Change readers of ${name}`, () => editReaders(cell, doc), "link"));
}

function editReaders(cell, doc) {
  const name = doc.filename || doc.title;
  const form = element("form", null, "row");
  const id = `readers-${doc.id}`;
  const label = element("label", `Readers of ${name}`, "visually-hidden");
  label.htmlFor = id;
  const input = element("input");
  input.id = id;
  input.value = doc.access.join(", ");
  input.placeholder = "everyone, or group:sales, user:ana@example.com";
  const save = element("button", "Save");
  save.type = "submit";
  form.append(label, input, save, button("Cancel", () => showReaders(cell, doc), "secondary"));
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const access = input.value.split(",").map((part) => part.trim()).filter(Boolean);
    try {
      const changed = await json("PATCH", `/v1/documents/${encodeURIComponent(doc.id)}`, { access });
      showReaders(cell, changed);
      say("documents-message", `${name}: readable by ${access.length ? access.join(", ") : "everyone"}.`);
    } catch (error) {
      if (!refused(error)) say("documents-message", `${name}: ${error.message}`, true);
    }
  });
  cell.replaceChildren(form);
  input.focus();
}

async function removeDocument(doc) {
  if (!window.confirm(`Delete ${doc.filename || doc.title} and everything indexed from it?`)) return;
  let outcome;
  try {
    await (await call("DELETE", `/v1/documents/${encodeURIComponent(doc.id)}`)).text();
    outcome = [`Deleted ${doc.filename || doc.title}.`, false];
  } catch (error) {
    if (refused(error)) return;
    outcome = [refusal(error), true];
  }
  await loadDocuments(currentCursor());
  say("documents-message", ...outcome);
}

// ------------------------------------------------------------------ asking

let history_ = []; // the conversation's turns, sent with each follow-up question

function citationLinks(target, text, citations) {
  // The answer is text; only the [n] markers become buttons, built as elements.
  target.replaceChildren();
  const byNumber = new Map(citations.map((c) => [c.number, c]));
  let last = 0;
  for (const match of text.matchAll(/\[(\d+)\]/g)) {
    const cited = byNumber.get(Number(match[1]));
    if (!cited) continue;
    target.append(document.createTextNode(text.slice(last, match.index)));
    const link = button(`[${cited.number}]`, () => openChunk(cited.chunk_id, cited), "link");
    link.setAttribute("aria-label", `Source ${cited.number}: ${cited.title || cited.source}`);
    target.append(link);
    last = match.index + match[0].length;
  }
  target.append(document.createTextNode(text.slice(last)));
}

async function ask(event) {
  event.preventDefault();
  const question = $("question").value.trim();
  if (!question) return;
  say("ask-message", "");
  $("ask-button").disabled = true;
  $("new-conversation").disabled = true;
  const conversation = $("conversation");
  conversation.setAttribute("aria-busy", "true"); // one announcement when whole
  conversation.append(element("div", question, "turn user"));
  const turn = element("div", "", "turn answer");
  const body = element("div");
  turn.append(body);
  conversation.append(turn);
  let text = "";
  let citations = [];
  let finished = false;
  try {
    const history = history_.slice(-MAX_HISTORY);
    const response = await call("POST", "/v1/query", { question, history, stream: true });
    const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
    let buffer = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += value.replace(/\r\n?/g, "\n");
      let end;
      while ((end = buffer.indexOf("\n\n")) >= 0) {
        const [name, data] = sseEvent(buffer.slice(0, end));
        buffer = buffer.slice(end + 2);
        if (name === "token") {
          text += data.text;
          citationLinks(body, text, citations);
        } else if (name === "citations") {
          citations = data;
          citationLinks(body, text, citations);
        } else if (name === "done") {
          finished = true;
          text = data.answer;
          citationLinks(body, text, citations);
          if (data.not_found) {
            turn.classList.add("not-found");
            turn.prepend(element("span", "Not found in your documents", "label"));
          }
        } else if (name === "error") {
          throw new Error(data.message);
        }
      }
    }
    if (!finished) throw new Error("The answer stopped before it was complete; ask again.");
    history_ = [...history_, { role: "user", content: question }, { role: "assistant", content: text }];
    $("question").value = "";
  } catch (error) {
    turn.remove();
    conversation.lastElementChild?.remove(); // the question that got no answer
    if (error instanceof ApiError && refused(error)) return;
    say("ask-message", error instanceof ApiError ? refusal(error) : error.message, true);
  } finally {
    conversation.setAttribute("aria-busy", "false");
    $("ask-button").disabled = false;
    $("new-conversation").disabled = false;
  }
}

function sseEvent(block) {
  // One Server-Sent Event: its name and its data lines joined, parsed as JSON.
  let name = "message";
  const data = [];
  for (const line of block.split("\n")) {
    if (line.startsWith("event:")) name = line.slice(6).trim();
    else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
  }
  return [name, data.length ? JSON.parse(data.join("\n")) : null];
}

function newConversation() {
  history_ = [];
  $("conversation").replaceChildren();
  $("question").focus();
}

// ------------------------------------------------------------------ reading a chunk

let opener = null;

// The chunk's text with the cited words marked, built from text nodes (never HTML).
function citedText(text, citation) {
  const paragraph = element("p", "", "cited");
  const { start, end } = citation || {};
  if (!citation || citation.located !== "sentence" || !(end > start) || end > text.length) {
    paragraph.textContent = text;
    return paragraph;
  }
  const quote = element("mark", text.slice(start, end), "quote");
  paragraph.append(document.createTextNode(text.slice(0, start)), quote);
  paragraph.append(document.createTextNode(text.slice(end)));
  return paragraph;
}

// The cited page as a picture, with the cited lines marked over it.  The picture
// is fetched with the key (an <img> cannot send it) and shown from a blob: URL;
// the marks are placed in percent of the page, so they follow its size.
let pageUrl = null;

async function citedPage(citation) {
  const boxes = (citation && citation.boxes) || [];
  if (!boxes.length) return null;
  const page = boxes[0].page;
  const path = `/v1/documents/${encodeURIComponent(citation.document_id)}/pages/${page}/image`;
  const blob = await (await call("GET", `${path}?width=900`)).blob();
  if (pageUrl) URL.revokeObjectURL(pageUrl);
  pageUrl = URL.createObjectURL(blob);
  const figure = element("figure", null, "page");
  const frame = element("div", null, "page-frame");
  const picture = element("img", null, "page-image");
  picture.alt = `Page ${page} of ${citation.source}, the cited lines marked`;
  picture.src = pageUrl;
  frame.append(picture);
  for (const box of boxes.filter((b) => b.page === page)) {
    const mark = element("div", null, "page-mark");
    mark.style.left = `${(100 * box.left) / box.page_width}%`;
    mark.style.top = `${(100 * box.top) / box.page_height}%`;
    mark.style.width = `${(100 * (box.right - box.left)) / box.page_width}%`;
    mark.style.height = `${(100 * (box.bottom - box.top)) / box.page_height}%`;
    frame.append(mark);
  }
  figure.append(frame, element("figcaption", `Page ${page}`));
  return figure;
}

async function openChunk(chunkId, citation = null) {
  opener = document.activeElement;
  const view = $("chunk-view");
  const body = $("chunk-body");
  body.replaceChildren(element("p", "Loading…"));
  view.hidden = false;
  document.body.classList.add("reading");
  try {
    const found = await json("GET", `/v1/chunks/${encodeURIComponent(chunkId)}?above=1&below=1`);
    const chunk = found.chunk;
    $("chunk-title").textContent = chunk.title || chunk.source;
    const pages = chunk.page_numbers.length ? ` · page ${chunk.page_numbers.join(", ")}` : "";
    // A citation names the section of the words it cites, which in a passage
    // joining small sections need not be the passage's first.
    const path = citation ? citation.heading_path : chunk.heading_path;
    const heading = path.length ? ` · ${path.join(" › ")}` : "";
    const lines = citation && citation.lines ? ` · lines ${citation.lines.join("–")}` : "";
    $("chunk-where").textContent = `${chunk.source}${pages}${heading}${lines}`;
    // A passage of joined windows is longer than its first window: the citation's
    // own text is what its offsets count in.
    const cited = citedText(citation && citation.text ? citation.text : chunk.text, citation);
    const page = await citedPage(citation).catch(() => null); // the text still reads without it
    body.replaceChildren(
      ...(page ? [page] : []),
      ...found.above.map((c) => element("p", c.text, "context")),
      cited,
      ...found.below.map((c) => element("p", c.text, "context")),
    );
    body.dataset.chunk = chunk.id;
  } catch (error) {
    if (refused(error)) return;
    body.replaceChildren(element("p", refusal(error), "message bad"));
  }
  // Focus moves to the title for keyboard and screen-reader users; the view
  // then scrolls to the cited words, without moving the focus.
  $("chunk-title").focus();
  const mark = body.querySelector(".page-mark") || body.querySelector("mark.quote");
  if (mark) mark.scrollIntoView({ block: "center" });
}

function closeChunk() {
  if ($("chunk-view").hidden) return;
  $("chunk-view").hidden = true;
  document.body.classList.remove("reading");
  if (opener && opener.isConnected) opener.focus();
  else $("chunk-view").previousElementSibling?.focus?.();
}

// ------------------------------------------------------------------ search

function listOf(id) {
  return $(id).value.split(",").map((s) => s.trim()).filter(Boolean);
}

function score(label, value) {
  return value === null || value === undefined ? null : `${label} ${value.toFixed(3)}`;
}

async function search(event) {
  event.preventDefault();
  const filters = {};
  if (listOf("search-sources").length) filters.sources = listOf("search-sources");
  if (listOf("search-documents").length) filters.document_ids = listOf("search-documents");
  if ($("search-after").value) filters.created_after = `${$("search-after").value}T00:00:00Z`;
  if ($("search-before").value) filters.created_before = `${$("search-before").value}T23:59:59Z`;
  const body = { query: $("search-query").value, top_k: Number($("search-top").value) || 10 };
  if (Object.keys(filters).length) body.filters = filters;
  try {
    const found = await json("POST", "/v1/search", body);
    say("search-message", `${found.results.length} of ${found.total_found} passages.`);
    $("results").replaceChildren(
      ...found.results.map((hit) => {
        const item = element("li");
        const title = button(hit.chunk.title || hit.chunk.source, () => openChunk(hit.chunk.id), "link");
        const scores = [
          score("score", hit.score),
          score("dense", hit.vector_score),
          score("keyword", hit.keyword_score),
          score("rerank", hit.rerank_score),
        ].filter(Boolean);
        item.append(title, element("div", `${hit.chunk.source} · ${scores.join(" · ")}`, "scores"));
        item.append(element("div", hit.chunk.text, "text"));
        return item;
      }),
    );
  } catch (error) {
    if (!refused(error)) say("search-message", refusal(error), true);
  }
}

// ------------------------------------------------------------------ re-index status

async function loadReindex() {
  try {
    const status = await json("GET", "/v1/reindex");
    const generations = status.generations || [];
    $("generations").tBodies[0].replaceChildren(
      ...generations.map((g) => {
        const row = element("tr");
        const progress = g.total ? `${g.done} of ${g.total}` : `${g.chunks} chunks`;
        row.append(
          element("td", g.id),
          element("td", g.state),
          element("td", `${g.embedding_model} (${g.embedding_dim})`),
          element("td", progress),
          element("td", g.failed),
        );
        return row;
      }),
    );
    say("reindex-message", generations.length ? "" : "Nothing indexed yet.");
  } catch (error) {
    if (refused(error)) return;
    say("reindex-message", error.status === 403 ? "Re-index status needs an admin key." : refusal(error), true);
  }
}

// ------------------------------------------------------------------ wiring

async function start() {
  const link = takeLinkFromAddress();
  $("sign-in-form").addEventListener("submit", (event) => {
    event.preventDefault();
    signIn($("key").value.trim());
    $("key").value = "";
  });
  $("sign-out").addEventListener("click", signOut);
  for (const tab of TABS) {
    $(`tab-${tab}`).addEventListener("click", () => selectTab(tab, false));
    $(`tab-${tab}`).addEventListener("keydown", tabKeys);
  }
  const drop = $("drop");
  drop.addEventListener("dragover", (event) => {
    event.preventDefault();
    drop.classList.add("over");
  });
  drop.addEventListener("dragleave", () => drop.classList.remove("over"));
  drop.addEventListener("drop", dropped);
  for (const id of ["files", "folder"]) {
    $(id).addEventListener("change", (event) => {
      const files = [...event.target.files];
      uploadAll(files.map((file) => [file, file.webkitRelativePath || file.name]));
      event.target.value = "";
    });
  }
  $("filter-form").addEventListener("submit", (event) => {
    event.preventDefault();
    activeFilter = $("filter").value.trim();
    cursors.length = 1;
    loadDocuments(null);
  });
  $("next-page").addEventListener("click", () => {
    cursors.push($("next-page").dataset.cursor);
    loadDocuments(currentCursor());
  });
  $("prev-page").addEventListener("click", () => {
    if (cursors.length > 1) cursors.pop();
    loadDocuments(currentCursor());
  });
  $("refresh-jobs").addEventListener("click", loadJobs);
  $("ask-form").addEventListener("submit", ask);
  $("new-conversation").addEventListener("click", newConversation);
  $("search-form").addEventListener("submit", search);
  $("refresh-reindex").addEventListener("click", loadReindex);
  $("chunk-close").addEventListener("click", closeChunk);
  document.addEventListener("keydown", (event) => {
    if (event.key === "Escape" && !$("chunk-view").hidden) closeChunk();
  });
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
  // The tab's own key first, so that a link is weighed against what it would replace.
  if (key()) await signIn(key());
  if (link) await followLink(link);
  else if (!key()) showSignIn("");
}

start();
