// The documents in the knowledge base: newest first, filtered by name, a page at a time,
// each with who may read it.

import { $, button, call, element, json, mayWrite, refused, refusal, say } from "./shared.js";

const PAGE_SIZE = 20;

const cursors = [null]; // the cursor of each page shown so far
let activeFilter = ""; // the name filter last submitted (not what is being typed)
let listRequest = 0; // only the latest list request may draw the table

export function currentCursor() {
  return cursors[cursors.length - 1];
}

export async function loadDocuments(cursor) {
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

export function forgetDocuments() {
  cursors.length = 1;
  activeFilter = "";
  $("filter").value = "";
  $("documents").tBodies[0].replaceChildren();
  say("documents-message", "");
}

export function wireDocuments() {
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
}
