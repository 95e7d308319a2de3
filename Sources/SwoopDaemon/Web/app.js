// The page: connects with the secret, shows the downloads and steers them. The logic it relies on
// lives in format.js, model.js and rpc.js (tested on their own); this file is the DOM around them.
import { bytes, eta, percent, rate } from "./format.js";
import { DownloadList } from "./model.js";
import { RPCClient, RPCError, socketURL } from "./rpc.js";

const $ = (id) => document.getElementById(id);
const keys = ["gid", "status", "totalLength", "completedLength", "downloadSpeed", "connections", "errorMessage", "errorCode", "dir", "files"];
const list = new DownloadList();
const items = new Map();
let client = null;
let renderQueued = false;
let refreshQueued = false;
let stat = null;
/** Signed links to finished files (swoop.getFileLink), by GID, with when to ask again. */
const links = new Map();
let linksQueued = false;

function takeToken() {
  const match = /(?:^#|&)token=([^&]*)/.exec(location.hash);
  if (match) {
    sessionStorage.setItem("swoop.token", decodeURIComponent(match[1]));
    // The secret does not stay in the address bar (nor in the history).
    history.replaceState(null, "", location.pathname + location.search);
  }
  return sessionStorage.getItem("swoop.token");
}

function showLogin(message) {
  $("app").hidden = true;
  $("login").hidden = false;
  $("login-error").textContent = message || "";
  $("connection").textContent = "Not connected";
  $("token").focus();
}

async function connect(token) {
  $("connection").textContent = "Connecting…";
  if (client) {
    // Another token (a new link, the form): the old connection ends without reconnecting.
    client.onClose = null;
    client.close();
  }
  const attempt = new RPCClient(socketURL(location), token);
  client = attempt;
  try {
    await attempt.open();
    await attempt.call("aria2.getVersion");
  } catch (error) {
    attempt.onClose = null;
    attempt.close();
    if (client !== attempt) return;
    client = null;
    if (error instanceof RPCError && error.code === 1) {
      sessionStorage.removeItem("swoop.token");
      showLogin("Wrong secret: the daemon refused it.");
    } else {
      showLogin(`Cannot reach the daemon: ${error.message}`);
    }
    return;
  }
  $("login").hidden = true;
  $("app").hidden = false;
  $("connection").textContent = "Connected";
  if (client !== attempt) return;
  attempt.onNotification = () => queueRefresh();
  attempt.onClose = () => {
    if (client !== attempt) return;
    $("connection").textContent = "Connection lost; reconnecting…";
    setTimeout(() => {
      if (client === attempt) connect(token);
    }, 1000);
  };
  await refresh();
}

function queueRefresh() {
  if (refreshQueued) return;
  refreshQueued = true;
  setTimeout(() => {
    refreshQueued = false;
    refresh();
  }, 100);
}

async function refresh() {
  if (!client) return;
  try {
    const [active, waiting, stopped, global] = await client.multicall([
      ["aria2.tellActive", keys], ["aria2.tellWaiting", 0, 1000, keys], ["aria2.tellStopped", 0, 1000, keys], ["aria2.getGlobalStat"],
    ]);
    for (const answer of [active, waiting, stopped]) if (answer instanceof Error) throw answer;
    stat = global instanceof Error ? null : global;
    if (list.replace([...active, ...waiting, ...stopped])) queueRender();
    else renderTotals();
  } catch (error) {
    $("connection").textContent = `Cannot list the downloads: ${error.message}`;
  }
}

/** Speed changes only with a poll: the active downloads and the totals, once a second. */
async function pollActive() {
  if (!client || $("app").hidden) return;
  try {
    const [active, global] = await client.multicall([["aria2.tellActive", keys], ["aria2.getGlobalStat"]]);
    if (!(active instanceof Error) && list.update(active)) queueRender();
    if (!(global instanceof Error)) stat = global;
    renderTotals();
  } catch {
    // The connection's own handler reports a lost daemon.
  }
}

function queueRender() {
  if (renderQueued) return;
  renderQueued = true;
  requestAnimationFrame(() => {
    renderQueued = false;
    render();
  });
}

function renderTotals() {
  if (!stat) return;
  $("totals").textContent = `${rate(stat.downloadSpeed)} · ${stat.numActive} active · ${stat.numWaiting} waiting · ${stat.numStopped} stopped`;
}

function render() {
  renderTotals();
  const rows = list.view({ state: $("filter").value, search: $("search").value });
  const ul = $("list");
  const shown = new Set();
  let previous = null;
  for (const row of rows) {
    shown.add(row.gid);
    let item = items.get(row.gid);
    if (!item) {
      item = makeItem(row.gid);
      items.set(row.gid, item);
    }
    fill(item, row);
    const next = previous ? previous.nextSibling : ul.firstChild;
    if (next !== item.element) ul.insertBefore(item.element, next);
    previous = item.element;
  }
  for (const [gid, item] of items) {
    if (!shown.has(gid)) {
      item.element.remove();
      if (!list.rows.has(gid)) items.delete(gid);
    }
  }
  $("empty").hidden = rows.length > 0;
  if (rows.some((row) => row.state === "complete" && !freshLink(row.gid))) queueLinks(rows);
}

function freshLink(gid) {
  const link = links.get(gid);
  return link && link.until > Date.now() ? link.url : null;
}

/** Asks for links to the finished files shown (links last an hour; asked again after 50 minutes). */
function queueLinks(rows) {
  if (linksQueued || !client) return;
  linksQueued = true;
  const wanted = rows.filter((row) => row.state === "complete" && !freshLink(row.gid)).slice(0, 100).map((row) => row.gid);
  client.multicall(wanted.map((gid) => ["swoop.getFileLink", gid])).then((answers) => {
    answers.forEach((answer, index) => {
      if (typeof answer === "string") links.set(wanted[index], { url: answer, until: Date.now() + 50 * 60 * 1000 });
    });
    linksQueued = false;
    queueRender();
  }, () => {
    linksQueued = false;
  });
}

function element(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

function makeItem(gid) {
  const li = element("li", "item");
  li.dataset.gid = gid;
  const text = element("div");
  const name = element("div", "name");
  const file = element("a", "file");
  const label = element("span");
  name.append(file, label);
  const meta = element("div", "meta");
  const state = element("span", "state");
  const numbers = element("span");
  const failure = element("div", "failure");
  meta.append(state, numbers);
  text.append(name, meta, failure);
  const actions = element("div", "actions");
  const pause = element("button", "", "Pause");
  const resume = element("button", "", "Resume");
  const remove = element("button", "", "Remove");
  for (const button of [pause, resume, remove]) button.type = "button";
  pause.addEventListener("click", () => act("aria2.pause", gid));
  resume.addEventListener("click", () => act("aria2.unpause", gid));
  remove.addEventListener("click", () => removeDownload(gid));
  actions.append(pause, resume, remove);
  const track = element("div", "bar-track");
  track.setAttribute("role", "progressbar");
  track.setAttribute("aria-valuemin", "0");
  track.setAttribute("aria-valuemax", "100");
  const fillBar = element("div", "bar-fill");
  track.append(fillBar);
  li.append(text, actions, track);
  return { element: li, name, file, label, state, numbers, failure, pause, resume, remove, track, fillBar };
}

function fill(item, row) {
  item.element.className = `item state-${row.state}`;
  // A finished download's name links to its file (an attachment: the page stays).
  const link = row.state === "complete" ? freshLink(row.gid) : null;
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
  item.state.textContent = row.state;
  const done = percent(row.done, row.total);
  const parts = [row.total > 0 ? `${bytes(row.done)} of ${bytes(row.total)}` : bytes(row.done)];
  if (row.state === "active") parts.push(rate(row.speed), `ETA ${eta(row.done, row.total, row.speed)}`, `${row.connections} conn.`);
  item.numbers.textContent = ` · ${parts.join(" · ")}`;
  item.failure.textContent = row.state === "error" ? row.error : "";
  item.pause.hidden = !(row.state === "active" || row.state === "waiting");
  item.resume.hidden = row.state !== "paused";
  item.pause.setAttribute("aria-label", `Pause ${row.name}`);
  item.resume.setAttribute("aria-label", `Resume ${row.name}`);
  item.remove.setAttribute("aria-label", `Remove ${row.name}`);
  item.track.setAttribute("aria-label", `Progress of ${row.name}`);
  if (done === null) item.track.removeAttribute("aria-valuenow");
  else item.track.setAttribute("aria-valuenow", String(done));
  item.fillBar.style.width = `${done ?? 0}%`;
}

async function act(method, gid) {
  try {
    await client.call(method, gid);
  } catch (error) {
    $("connection").textContent = error.message;
  }
  queueRefresh();
}

async function removeDownload(gid) {
  const row = list.rows.get(gid);
  const stopped = row && (row.state === "complete" || row.state === "error" || row.state === "removed");
  await act(stopped ? "aria2.removeDownloadResult" : "aria2.remove", gid);
}

async function add(event) {
  event.preventDefault();
  const urls = $("urls").value.split("\n").map((line) => line.trim()).filter((line) => line.length > 0);
  const options = {};
  const dir = $("add-dir").value.trim();
  const out = $("add-out").value.trim();
  const split = $("add-split").value.trim();
  const limit = $("add-limit").value.trim();
  const checksum = $("add-checksum").value.trim();
  const headers = $("add-headers").value.split("\n").map((line) => line.trim()).filter((line) => line.length > 0);
  if (out && urls.length > 1) {
    $("add-error").textContent = "A file name applies to one URL only.";
    return;
  }
  if (dir) options.dir = dir;
  if (out) options.out = out;
  if (split) options.split = split;
  if (limit) options["max-download-limit"] = limit;
  if (checksum) options.checksum = checksum;
  if (headers.length > 0) options.header = headers;
  const failures = [];
  for (const url of urls) {
    try {
      await client.call("aria2.addUri", [url], options);
    } catch (error) {
      failures.push(`${url}: ${error.message}`);
    }
  }
  $("add-error").textContent = failures.join("\n");
  if (failures.length === 0) $("urls").value = "";
  queueRefresh();
}

$("login").addEventListener("submit", (event) => {
  event.preventDefault();
  const token = $("token").value;
  sessionStorage.setItem("swoop.token", token);
  connect(token);
});
$("add").addEventListener("submit", add);
$("filter").addEventListener("change", queueRender);
$("search").addEventListener("input", queueRender);
setInterval(pollActive, 1000);
setInterval(refresh, 5000);

// A link with another token opened in this tab changes only the address's fragment.
window.addEventListener("hashchange", () => {
  if (/(?:^#|&)token=/.test(location.hash)) connect(takeToken());
});

const token = takeToken();
if (token) connect(token);
else showLogin();
