// Formatting for the page: pure functions, tested in Tests/Web/format.test.js.

const units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];

/** 1536 → "1.50 KiB"; three significant digits, binary units (as the command line prints them). */
export function bytes(count) {
  let value = Number(count);
  if (!Number.isFinite(value) || value < 0) return "?";
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  if (unit === 0) return `${value} B`;
  const digits = value >= 100 ? 0 : value >= 10 ? 1 : 2;
  return `${value.toFixed(digits)} ${units[unit]}`;
}

/** Bytes per second as "2.00 MiB/s"; nothing moving is "0 B/s". */
export function rate(perSecond) {
  return `${bytes(Math.max(0, Math.round(Number(perSecond) || 0)))}/s`;
}

/** Seconds as "45s", "3m 05s", "2h 07m", "3d 04h"; unknown (no speed, no size) is "—". */
export function duration(seconds) {
  if (!Number.isFinite(seconds) || seconds < 0) return "—";
  const s = Math.ceil(seconds);
  if (s < 60) return `${s}s`;
  const pad = (n) => String(n).padStart(2, "0");
  if (s < 3600) return `${Math.floor(s / 60)}m ${pad(s % 60)}s`;
  if (s < 86400) return `${Math.floor(s / 3600)}h ${pad(Math.floor((s % 3600) / 60))}m`;
  return `${Math.floor(s / 86400)}d ${pad(Math.floor((s % 86400) / 3600))}h`;
}

/** Time left at the current speed, or "—" when it cannot be told. */
export function eta(done, total, speed) {
  if (!(total > 0) || !(speed > 0) || done >= total) return "—";
  return duration((total - done) / speed);
}

/** Whole percent done (0–100), floored so that 100 means complete; `null` when the size is unknown. */
export function percent(done, total) {
  if (!(total > 0)) return null;
  return Math.min(100, Math.floor((done / total) * 100));
}

/** A byte count as aria2 writes sizes: "200K" for 204800, "10M", else the number. */
export function sizeOption(value) {
  const count = Number(value);
  if (!Number.isInteger(count) || count <= 0) return String(value ?? "");
  if (count % (1024 * 1024) === 0) return `${count / (1024 * 1024)}M`;
  if (count % 1024 === 0) return `${count / 1024}K`;
  return String(count);
}

/** The page's word for a state, aria2's or Swoop's: "error" and "failed" are "failed", "completed" is "complete". */
export function stateWord(state) {
  return { error: "failed", completed: "complete" }[state] || state;
}

/**
 * A node of a fleet (one answer of swoop.getNodes) as its row's cells: name, address, downloads
 * running, speed, and when it was last heard from ("now" within a second).
 */
export function nodeCells(node) {
  const silent = Number(node.silentFor);
  const heard = !Number.isFinite(silent) || silent < 0 ? "—" : silent < 1 ? "now" : `${duration(silent)} ago`;
  return [String(node.name ?? ""), String(node.address || "—"), String(Number(node.numActive) || 0), rate(node.downloadSpeed), heard];
}
