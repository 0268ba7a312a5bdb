// Reading a source: the passage a citation or a search hit opens, beside its neighbours.

import { $, call, element, json, refused, refusal } from "./shared.js";

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

export async function openChunk(chunkId, citation = null) {
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

export function closeChunk() {
  if ($("chunk-view").hidden) return;
  $("chunk-view").hidden = true;
  document.body.classList.remove("reading");
  if (opener && opener.isConnected) opener.focus();
  else $("chunk-view").previousElementSibling?.focus?.();
}

export function wireSource() {
  $("chunk-close").addEventListener("click", closeChunk);
  document.addEventListener("keydown", (event) => {
    if (event.key === "Escape" && !$("chunk-view").hidden) closeChunk();
  });
}
