// The list of downloads on screen: one page of rows (100), each row's elements made once and
// updated in place, selection, and the buttons of each row. Actions go to `handlers`.
import { bytes, eta, percent, rate, stateWord } from "./format.js";
import { page } from "./model.js";

export const pageSize = 100;

export function element(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

function button(text, onClick) {
  const node = element("button", "", text);
  node.type = "button";
  node.addEventListener("click", onClick);
  return node;
}

export class ListView {
  /**
   * @param root Elements by id: list, empty, pageInfo, previous, next, selectAll, selectedCount.
   *   `render(rows, known, total)`: `total` downloads in all, of which `rows` are shown.
   * @param handlers changed(), act(method, gid), remove(gids, withFiles), details(gid), move(gid, by),
   *   link(gid) → URL or null, open(gid) (a click on a finished file's name).
   */
  constructor(root, handlers) {
    this.root = root;
    this.handlers = handlers;
    this.items = new Map();
    this.selected = new Set();
    this.pageIndex = 0;
    this.shown = [];
    root.previous.addEventListener("click", () => this.show(this.pageIndex - 1));
    root.next.addEventListener("click", () => this.show(this.pageIndex + 1));
    root.selectAll.addEventListener("change", () => {
      for (const row of this.shown) {
        if (root.selectAll.checked) this.selected.add(row.gid);
        else this.selected.delete(row.gid);
      }
      this.handlers.changed();
    });
  }

  /** Page `index` (from 0) of the rows, nothing selected: only what is in sight may be. */
  show(index) {
    this.pageIndex = index;
    this.selected.clear();
    this.handlers.changed();
  }

  /** Shows `rows` (already filtered and sorted): the current page of them. */
  render(rows, known, total = rows.length) {
    const bounds = page(rows.length, this.pageIndex, pageSize);
    this.pageIndex = bounds.index;
    const shown = rows.slice(bounds.start, bounds.end);
    this.shown = shown;
    for (const gid of this.selected) if (!known.has(gid)) this.selected.delete(gid);
    const ul = this.root.list;
    const visible = new Set();
    let previous = null;
    for (const row of shown) {
      visible.add(row.gid);
      let item = this.items.get(row.gid);
      if (!item) {
        item = this.make(row.gid);
        this.items.set(row.gid, item);
      }
      this.fill(item, row);
      const next = previous ? previous.nextSibling : ul.firstChild;
      if (next !== item.element) ul.insertBefore(item.element, next);
      previous = item.element;
    }
    for (const [gid, item] of this.items) {
      if (!visible.has(gid)) {
        item.element.remove();
        this.items.delete(gid);
      }
    }
    this.root.empty.hidden = rows.length > 0;
    this.root.empty.textContent = total === 0 ? "No downloads yet." : `None of the ${total} downloads matches.`;
    this.root.pageInfo.textContent = rows.length === 0 ? "" : `${bounds.start + 1}–${bounds.end} of ${rows.length}`;
    this.root.previous.disabled = bounds.index === 0;
    this.root.next.disabled = bounds.index >= bounds.pages - 1;
    this.root.selectAll.checked = shown.length > 0 && shown.every((row) => this.selected.has(row.gid));
    this.root.selectedCount.textContent = this.selected.size > 0 ? `${this.selected.size} selected` : "";
  }

  make(gid) {
    const li = element("li", "item");
    li.dataset.gid = gid;
    const check = element("input");
    check.type = "checkbox";
    check.addEventListener("change", () => {
      if (check.checked) this.selected.add(gid);
      else this.selected.delete(gid);
      this.handlers.changed();
    });
    const text = element("div");
    const name = element("div", "name");
    const file = element("a", "file");
    file.addEventListener("click", (event) => {
      event.preventDefault();
      this.handlers.open(gid);
    });
    const label = element("span");
    name.append(file, label);
    const meta = element("div", "meta");
    const state = element("span", "state");
    const numbers = element("span");
    meta.append(state, numbers);
    const failure = element("div", "failure");
    text.append(name, meta, failure);
    const actions = element("div", "actions");
    const up = button("↑", () => this.handlers.move(gid, -1));
    const down = button("↓", () => this.handlers.move(gid, 1));
    const pause = button("Pause", () => this.handlers.act("aria2.pause", gid));
    const resume = button("Resume", () => this.handlers.act("aria2.unpause", gid));
    const remove = button("Remove", () => this.handlers.remove([gid], false));
    const details = button("Details", () => this.handlers.details(gid));
    actions.append(up, down, pause, resume, remove, details);
    const track = element("div", "bar-track");
    track.setAttribute("role", "progressbar");
    track.setAttribute("aria-valuemin", "0");
    track.setAttribute("aria-valuemax", "100");
    const fillBar = element("div", "bar-fill");
    track.append(fillBar);
    li.append(check, text, actions, track);
    return { element: li, check, file, label, name, state, numbers, failure, up, down, pause, resume, remove, details, track, fillBar };
  }

  fill(item, row) {
    item.element.className = `item state-${row.state}`;
    item.check.checked = this.selected.has(row.gid);
    // A finished download's name links to its file (an attachment: the page stays).
    const link = row.state === "complete" ? this.handlers.link(row.gid) : null;
    item.file.hidden = !link;
    item.label.hidden = Boolean(link);
    if (link) {
      item.file.href = link;
      item.file.textContent = row.name;
    } else {
      item.file.removeAttribute("href");
      item.label.textContent = row.name;
    }
    item.name.title = row.url;
    item.state.textContent = stateWord(row.state);
    const done = percent(row.done, row.total);
    const parts = [row.total > 0 ? `${bytes(row.done)} of ${bytes(row.total)}` : bytes(row.done)];
    if (row.state === "active") parts.push(rate(row.speed), `ETA ${eta(row.done, row.total, row.speed)}`, `${row.connections} conn.`);
    item.numbers.textContent = ` · ${parts.join(" · ")}`;
    item.failure.textContent = row.state === "error" ? row.error : "";
    item.pause.hidden = !(row.state === "active" || row.state === "waiting");
    item.resume.hidden = row.state !== "paused";
    item.up.hidden = item.down.hidden = row.state !== "waiting" && row.state !== "paused";
    if (item.labelledAs !== row.name) {
      item.labelledAs = row.name;
      for (const [node, verb] of [[item.check, "Select"], [item.pause, "Pause"], [item.resume, "Resume"], [item.remove, "Remove"],
        [item.details, "Details of"], [item.up, "Move up"], [item.down, "Move down"], [item.track, "Progress of"]]) {
        node.setAttribute("aria-label", `${verb} ${row.name}`);
      }
    }
    if (done === null) item.track.removeAttribute("aria-valuenow");
    else item.track.setAttribute("aria-valuenow", String(done));
    item.fillBar.style.width = `${done ?? 0}%`;
  }
}
