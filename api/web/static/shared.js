// What every screen uses: the page's elements, the API with the tab's key, and who is signed in.
// Text that came from a document is only ever put in the page as text (textContent, text
// nodes), never parsed as HTML.

export const KEY_SLOT = "ragsage.key";

export const $ = (id) => document.getElementById(id);

export function element(tag, text, className) {
  const node = document.createElement(tag);
  if (text !== undefined && text !== null) node.textContent = String(text);
  if (className) node.className = className;
  return node;
}

export function button(label, onClick, className) {
  const node = element("button", label, className);
  node.type = "button";
  node.addEventListener("click", onClick);
  return node;
}

// ------------------------------------------------------------------ the API

export class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

export function key() {
  return sessionStorage.getItem(KEY_SLOT);
}

// ``as`` names the key to send, for a request made before a key is taken (the
// question "whose key is this?"); by default the tab's own, and none at all for null.
export async function call(method, path, body, extra, as = key()) {
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

export async function json(method, path, body, as = key()) {
  return (await call(method, path, body, undefined, as)).json();
}

export function refusal(error) {
  if (error.status === 401) return "The API key was refused: it is not valid or has been revoked.";
  if (error.status === 403) return `This key lacks the role for that: ${error.message}`;
  return error.message;
}

// A key revoked or expired mid-session: back to the sign-in, saying why.  How to go
// back is the sign-in screen's to say (session.js), which sits above every screen
// that may meet the refusal, so it is handed down rather than imported.
let onRevoked = () => {};

export function whenRevoked(handler) {
  onRevoked = handler;
}

export function refused(error) {
  if (error.status === 401) {
    onRevoked(refusal(error));
    return true;
  }
  return false;
}

export function say(id, text, bad) {
  const node = $(id);
  node.textContent = text || "";
  node.classList.toggle("bad", Boolean(bad));
}

// ------------------------------------------------------------------ who is signed in

// What the signed-in key is (GET /v1/key): its namespace, role, and whether it is a
// restricted key, which decides what the page offers.  Set by the sign-in alone.
export let me = null;

export function signedInAs(info) {
  me = info;
}

export function mayWrite() {
  return Boolean(me) && me.role !== "read";
}

export function listsDocuments() {
  // A restricted key with filters may only search and ask (the API refuses the rest).
  return Boolean(me) && !(me.restricted && me.restricted.filters);
}
