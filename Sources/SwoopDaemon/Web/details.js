// The detail view of one download: swoop.getDetails (sources, file, validators, segments, the
// retry under way, the last error) and what this page saw happen to it.
import { bytes, percent, stateWord } from "./format.js";
import { element } from "./listview.js";
import { baseName } from "./model.js";

function item(list, term, value) {
  list.append(element("dt", "", term), element("dd", "", value));
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
  const parts = (details.segments || []).map((segment) => {
    const size = Number(segment.end) - Number(segment.start);
    return `${bytes(segment.start)}–${bytes(segment.end)}: ${percent(Number(segment.written), size) ?? 0}% written`;
  });
  segments.append(...(parts.length > 0 ? parts : ["one stream, no segments"]).map((text) => element("li", "", text)));
  const seen = history.map((entry) => `${entry.at.toLocaleTimeString()} ${entry.text}`);
  events.append(...(seen.length > 0 ? seen : ["nothing seen since this page opened"]).map((text) => element("li", "", text)));
  const name = details.path ? details.path.split("/").pop() : baseName(details.url.split(/[?#]/)[0]) || details.url;
  dialog.querySelector("h2").textContent = `Details: ${name}`;
  if (!dialog.open) dialog.showModal();
}
