// Searching: ranked passages with the score of each stage, filtered on the server.

import { $, button, element, json, refused, refusal, say } from "./shared.js";
import { openChunk } from "./source.js";

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

export function forgetSearch() {
  $("results").replaceChildren();
  say("search-message", "");
}

export function wireSearch() {
  $("search-form").addEventListener("submit", search);
}
