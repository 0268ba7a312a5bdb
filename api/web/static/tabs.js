// The tabs between the screens, following the WAI-ARIA pattern (arrow keys, Home, End).

import { $, key } from "./shared.js";
import { loadReindex } from "./reindex.js";
import { loadJobs } from "./uploads.js";

const TABS = ["documents", "ask", "search", "reindex"];

export function selectTab(name, focus) {
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

export function wireTabs() {
  for (const tab of TABS) {
    $(`tab-${tab}`).addEventListener("click", () => selectTab(tab, false));
    $(`tab-${tab}`).addEventListener("keydown", tabKeys);
  }
}
