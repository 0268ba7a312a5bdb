// Uploads and their jobs: files or a folder dropped or chosen, each followed to its end, and
// the namespace's recent jobs to retry or cancel.

import { $, button, element, json, key, mayWrite, refused, refusal, say } from "./shared.js";
import { currentCursor, loadDocuments } from "./documents.js";

const POLL_MS = 700;

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

export async function loadJobs() {
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

export function forgetUploads() {
  stopPolling();
  watched.clear();
  $("uploads").replaceChildren();
  $("jobs").tBodies[0].replaceChildren();
}

export function wireUploads() {
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
  $("refresh-jobs").addEventListener("click", loadJobs);
}
