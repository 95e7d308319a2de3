// The list of downloads the page shows: aria2 status objects in, rows out. Pure (no DOM, no
// network), tested in Tests/Web/model.test.js.

/** The states the page knows, in aria2's words; "complete" is what a finished download says. */
export const states = ["active", "waiting", "paused", "complete", "error", "removed"];

/** One aria2 status (numbers as decimal strings) as a row. */
export function row(status) {
  const files = Array.isArray(status.files) ? status.files : [];
  const uris = files.length > 0 && Array.isArray(files[0].uris) ? files[0].uris : [];
  const url = uris.length > 0 ? uris[0].uri : "";
  const path = files.length > 0 ? files[0].path || "" : "";
  return {
    gid: status.gid,
    state: status.status,
    name: baseName(path) || baseName(url.split(/[?#]/)[0]) || url || status.gid,
    url,
    total: Number(status.totalLength) || 0,
    done: Number(status.completedLength) || 0,
    speed: Number(status.downloadSpeed) || 0,
    connections: Number(status.connections) || 0,
    error: status.errorMessage || "",
  };
}

/** The last part of a path or URL path, percent-decoded where it can be. */
export function baseName(path) {
  const parts = String(path).split("/").filter((part) => part.length > 0);
  if (parts.length === 0) return "";
  try {
    return decodeURIComponent(parts[parts.length - 1]);
  } catch {
    return parts[parts.length - 1];
  }
}

/** Downloads by GID, in the order the daemon lists them (active, then the queue, then stopped). */
export class DownloadList {
  constructor() {
    this.rows = new Map();
    this.order = [];
  }

  /**
   * Replaces the whole list with what tellActive, tellWaiting and tellStopped returned (in
   * that order); returns whether anything changed.
   */
  replace(statuses) {
    const next = new Map();
    const order = [];
    for (const status of statuses) {
      if (!status || typeof status.gid !== "string" || next.has(status.gid)) continue;
      next.set(status.gid, row(status));
      order.push(status.gid);
    }
    const changed = order.length !== this.order.length || order.some((gid, index) => gid !== this.order[index]
      || !sameRow(next.get(gid), this.rows.get(gid)));
    this.rows = next;
    this.order = order;
    return changed;
  }

  /** Updates the rows of these statuses (a poll of the active ones); unknown ones are added. */
  update(statuses) {
    let changed = false;
    for (const status of statuses) {
      if (!status || typeof status.gid !== "string") continue;
      const next = row(status);
      if (!this.rows.has(status.gid)) this.order.push(status.gid);
      if (!sameRow(next, this.rows.get(status.gid))) {
        this.rows.set(status.gid, next);
        changed = true;
      }
    }
    return changed;
  }

  remove(gid) {
    if (!this.rows.delete(gid)) return false;
    this.order = this.order.filter((other) => other !== gid);
    return true;
  }

  get size() {
    return this.order.length;
  }

  /** Counts by state. */
  counts() {
    const counts = Object.fromEntries(states.map((state) => [state, 0]));
    for (const row of this.rows.values()) counts[row.state] = (counts[row.state] || 0) + 1;
    return counts;
  }

  /**
   * The rows to show: in `state` ("all" for every one) whose name or URL contains `search`
   * (case-insensitive), sorted by `sort` ("queue", "name", "progress", "speed", "size").
   */
  view({ state = "all", search = "", sort = "queue" } = {}) {
    const needle = search.trim().toLowerCase();
    let rows = this.order.map((gid) => this.rows.get(gid)).filter((row) => (state === "all" || row.state === state)
      && (needle === "" || row.name.toLowerCase().includes(needle) || row.url.toLowerCase().includes(needle)));
    const by = {
      name: (a, b) => a.name.localeCompare(b.name),
      progress: (a, b) => fraction(b) - fraction(a),
      speed: (a, b) => b.speed - a.speed,
      size: (a, b) => b.total - a.total,
    }[sort];
    if (by) rows.sort(by);
    return rows;
  }
}

function fraction(row) {
  return row.total > 0 ? row.done / row.total : 0;
}

function sameRow(a, b) {
  if (!a || !b) return false;
  for (const key of Object.keys(a)) if (a[key] !== b[key]) return false;
  return true;
}

/**
 * Page `index` (from 0) of `count` rows, `size` per page, kept in range: the page shown, how
 * many pages there are and the rows' bounds ([start, end)).
 */
export function page(count, index, size) {
  const pages = Math.max(1, Math.ceil(count / size));
  const shown = Math.min(Math.max(0, index), pages - 1);
  return { index: shown, pages, start: shown * size, end: Math.min(count, (shown + 1) * size) };
}

/** The speeds of the last `length` seconds, for the graph: newest last. */
export class SpeedHistory {
  constructor(length = 300) {
    this.length = length;
    this.samples = [];
  }

  add(speed) {
    this.samples.push(Math.max(0, Number(speed) || 0));
    if (this.samples.length > this.length) this.samples.splice(0, this.samples.length - this.length);
  }

  /** SVG polyline points in a `width` × `height` box, the fastest sample at the top. */
  points(width, height) {
    if (this.samples.length === 0) return "";
    const top = Math.max(1, ...this.samples);
    const step = width / Math.max(1, this.length - 1);
    const offset = this.length - this.samples.length;
    return this.samples.map((speed, index) => `${((offset + index) * step).toFixed(1)},${(height - (speed / top) * height).toFixed(1)}`).join(" ");
  }
}
