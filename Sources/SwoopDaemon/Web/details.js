// The detail view of one download: swoop.getDetails (sources, file, validators, segments, the
// retry under way, the last error) and what this page saw happen to it.
import { bytes, percent, stateWord } from "./format.js";

function item(list, term, value) {
  const dt = document.createElement("dt");
  dt.textContent = term;
  const dd = document.createElement("dd");
  dd.textContent = value;
  list.append(dt, dd);
}

/** Fills and opens the dialog. `history` is [{at, text}] in the order seen. */
export function showDetails(dialog, details, history) {
  const list = dialog.querySelector("#details-list");
  const segments = dialog.querySelector("#details-segments");
  const events = dialog.querySelector("#details-history");
  list.replaceChildren();
  segments.replaceChildren();
  events.replaceChildren();
  const total = Number(details.totalLength);
  item(list, "State", stateWord(details.state));
  item(list, "URL", details.url);
  for (const mirror of details.mirrors || []) item(list, "Mirror", mirror);
  if (details.path) item(list, "File", details.path);
  item(list, "Done", `${bytes(details.completedLength)}${total > 0 ? ` of ${bytes(total)}` : ""}`);
  if (details.etag) item(list, "ETag", details.etag);
  if (details.lastModified) item(list, "Last-Modified", details.lastModified);
  if (details.checksum) item(list, "Checksum", details.checksum);
  if (details.retry) item(list, "Retry", `${details.retry.attempt} of ${details.retry.maxRetries}: ${details.retry.reason}`);
  if (details.lastError) item(list, "Last error", details.lastError);
  item(list, "Added", new Date(details.createdAt * 1000).toLocaleString());
  for (const segment of details.segments || []) {
    const li = document.createElement("li");
    const size = Number(segment.end) - Number(segment.start);
    li.textContent = `${bytes(segment.start)}–${bytes(segment.end)}: ${percent(Number(segment.written), size) ?? 0}% written`;
    segments.append(li);
  }
  if (segments.children.length === 0) segments.append(Object.assign(document.createElement("li"), { textContent: "one stream, no segments" }));
  for (const entry of history) {
    const li = document.createElement("li");
    li.textContent = `${entry.at.toLocaleTimeString()} ${entry.text}`;
    events.append(li);
  }
  if (events.children.length === 0) events.append(Object.assign(document.createElement("li"), { textContent: "nothing seen since this page opened" }));
  const name = details.path ? details.path.split("/").pop() : decodeURIComponent(details.url.split(/[?#]/)[0].split("/").pop() || details.url);
  dialog.querySelector("h2").textContent = `Details: ${name}`;
  if (!dialog.open) dialog.showModal();
}
