// Re-index status: the namespace's embedding generations and how far each has come.

import { $, element, json, refused, refusal, say } from "./shared.js";

export async function loadReindex() {
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

export function forgetReindex() {
  $("generations").tBodies[0].replaceChildren();
  say("reindex-message", "");
}

export function wireReindex() {
  $("refresh-reindex").addEventListener("click", loadReindex);
}
