// Asking: the answer streamed in as it is written, each [n] opening the passage it cites.

import { $, ApiError, button, call, element, refused, refusal, say } from "./shared.js";
import { openChunk } from "./source.js";

const MAX_HISTORY = 50; // the API's limit on a conversation's turns

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

export function forgetConversation() {
  history_ = [];
  $("conversation").replaceChildren();
  say("ask-message", "");
}

export function wireAsk() {
  $("ask-form").addEventListener("submit", ask);
  $("new-conversation").addEventListener("click", newConversation);
}
