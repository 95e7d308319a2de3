// The page: connects with the secret, shows the downloads and steers them. Its parts: format.js,
// model.js and rpc.js (logic, tested on their own), listview.js (the rows), details.js (one
// download); this file connects them to the daemon and to the controls.
import { nodeCells, rate, sizeOption, stateWord } from "./format.js";
import { DownloadList, SpeedHistory, states } from "./model.js";
import { RPCClient, RPCError, socketURL } from "./rpc.js";
import { ListView } from "./listview.js";
import { showDetails } from "./details.js";

const $ = (id) => document.getElementById(id);
const keys = ["gid", "status", "totalLength", "completedLength", "downloadSpeed", "connections", "errorMessage", "files"];
const list = new DownloadList();
const speeds = new SpeedHistory(300);
/** Signed links to finished files (swoop.getFileLink), by GID, with when to ask again. */
const links = new Map();
/** What this page saw happen to each download: [{at, text}]. */
const history = new Map();
let client = null;
let renderQueued = false;
let refreshQueued = false;
let linksQueued = false;
let refreshing = false;
let listed = false;
let polling = false;
let stat = null;

const view = new ListView(
  {
    list: $("list"), empty: $("empty"), pageInfo: $("page-info"), previous: $("previous-page"), next: $("next-page"),
    selectAll: $("select-all"), selectedCount: $("selected-count"),
  },
  {
    changed: queueRender,
    act: (method, gid) => act([[method, gid]]),
    remove,
    move: (gid, by) => act([["aria2.changePosition", gid, by, "POS_CUR"]]),
    details: openDetails,
    link: freshLink,
    open: openFile,
  },
);

function takeToken() {
  const match = /(?:^#|&)token=([^&]*)/.exec(location.hash);
  if (match) {
    let token = match[1];
    try {
      token = decodeURIComponent(token);
    } catch {
      // Not percent-encoded as it should be: taken as it is.
    }
    sessionStorage.setItem("swoop.token", token);
    // The secret does not stay in the address bar (nor in the history).
    window.history.replaceState(null, "", location.pathname + location.search);
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

/** Connects with `token`; a daemon that cannot be reached is tried again (1 s, doubling to 30 s). */
async function connect(token, delay = 1000) {
  $("connection").textContent = "Connecting…";
  if (client) {
    // Another token (a new link, the form): the old connection ends without reconnecting.
    client.onClose = null;
    client.close();
  }
  const attempt = new RPCClient(socketURL(location), token);
  client = attempt;
  let ready = false;
  attempt.onNotification = (method, params) => {
    const gid = params[0] && params[0].gid;
    if (!gid) return queueRefresh(500);
    note(gid, method.replace("aria2.onDownload", "").toLowerCase());
    if (method === "aria2.onDownloadComplete") notifyComplete(gid);
    queueChanged(gid);
  };
  attempt.onClose = () => {
    if (client !== attempt || !ready) return;
    $("connection").textContent = "Connection lost; reconnecting…";
    setTimeout(() => {
      if (client === attempt) connect(token);
    }, 1000);
  };
  try {
    await attempt.open();
    await attempt.call("aria2.getVersion");
  } catch (error) {
    attempt.onClose = null;
    attempt.close();
    if (client !== attempt) return;
    if (error instanceof RPCError && error.code === 1) {
      client = null;
      sessionStorage.removeItem("swoop.token");
      showLogin("Wrong secret: the daemon refused it.");
      return;
    }
    $("connection").textContent = `Cannot reach the daemon (${error.message}); trying again in ${Math.round(delay / 1000)} s`;
    setTimeout(() => {
      if (client === attempt) connect(token, Math.min(delay * 2, 30000));
    }, delay);
    return;
  }
  if (client !== attempt) return;
  ready = true;
  $("login").hidden = true;
  $("app").hidden = false;
  $("connection").textContent = "Connected";
  await Promise.all([refresh(), loadLimits()]);
}

function note(gid, text) {
  const entries = history.get(gid) || [];
  entries.push({ at: new Date(), text });
  if (entries.length > 50) entries.shift();
  history.set(gid, entries);
}

function notifyComplete(gid) {
  if (!("Notification" in window) || Notification.permission !== "granted" || document.visibilityState === "visible") return;
  const row = list.rows.get(gid);
  new Notification("Download complete", { body: row ? row.name : gid });
}

/** Downloads a notification named, read again together (a few at a time), not the whole list. */
const changed = new Set();
let changedQueued = false;

function queueChanged(gid) {
  changed.add(gid);
  if (changedQueued) return;
  changedQueued = true;
  setTimeout(async () => {
    changedQueued = false;
    const gids = [...changed];
    changed.clear();
    if (!client) return;
    if (gids.length > 100) return refresh();
    try {
      const answers = await client.multicall(gids.map((gid) => ["aria2.tellStatus", gid, keys]));
      const found = answers.filter((answer) => !(answer instanceof Error));
      // One no longer known (its result forgotten elsewhere): the whole list tells.
      if (found.length < answers.length) return queueRefresh(100);
      if (list.update(found)) queueRender();
    } catch {
      // The connection's own handler reports a lost daemon.
    }
  }, 200);
}

function queueRefresh(after = 100) {
  if (refreshQueued) return;
  refreshQueued = true;
  setTimeout(() => {
    refreshQueued = false;
    refresh();
  }, after);
}

/** The whole list; one at a time (with 10,000 downloads an answer takes a moment). */
async function refresh() {
  if (!client || refreshing) return;
  refreshing = true;
  try {
    const [active, waiting, stopped, global] = await client.multicall([
      ["aria2.tellActive", keys], ["aria2.tellWaiting", 0, 100000, keys], ["aria2.tellStopped", 0, 100000, keys], ["aria2.getGlobalStat"],
    ]);
    for (const answer of [active, waiting, stopped]) if (answer instanceof Error) throw answer;
    stat = global instanceof Error ? stat : global;
    // The first listing is drawn even when empty ("No downloads yet.").
    if (list.replace([...active, ...waiting, ...stopped]) || !listed) queueRender();
    else renderSpeed();
    listed = true;
  } catch (error) {
    if (client && !$("app").hidden) $("connection").textContent = `Cannot list the downloads: ${error.message}`;
  } finally {
    refreshing = false;
  }
}

/** Speed changes only with a poll: the active downloads and the totals, once a second. */
async function pollActive() {
  if (!client || $("app").hidden || polling) return;
  polling = true;
  try {
    const [active, global, nodes] = await client.multicall([["aria2.tellActive", keys], ["aria2.getGlobalStat"], ["swoop.getNodes"]]);
    // A daemon outside a fleet answers getNodes with an error: no panel.
    renderNodes(nodes instanceof Error ? null : nodes);
    if (!(global instanceof Error)) {
      stat = global;
      speeds.add(global.downloadSpeed);
    }
    if (!(active instanceof Error) && list.update(active)) queueRender();
    else renderSpeed();
  } catch {
    // The connection's own handler reports a lost daemon.
  } finally {
    polling = false;
  }
}

/** The fleet's nodes (swoop.getNodes), or none outside a fleet. */
function renderNodes(nodes) {
  $("nodes-panel").hidden = !nodes;
  if (!nodes) return;
  const rows = nodes.map((node) => {
    const row = document.createElement("tr");
    for (const text of nodeCells(node)) {
      const cell = document.createElement("td");
      cell.textContent = text;
      row.append(cell);
    }
    return row;
  });
  $("nodes-rows").replaceChildren(...rows);
}

function queueRender() {
  if (renderQueued) return;
  renderQueued = true;
  requestAnimationFrame(() => {
    renderQueued = false;
    render();
  });
}

/** The total speed and its graph: they change with each poll. */
function renderSpeed() {
  if (!stat) return;
  $("speed").textContent = rate(stat.downloadSpeed);
  $("graph-line").setAttribute("points", speeds.points(300, 60));
}

function render() {
  renderSpeed();
  const counts = list.counts();
  $("counts").textContent = states.map((state) => `${counts[state]} ${stateWord(state)}`).join(" · ");
  const rows = list.view({ state: $("filter").value, search: $("search").value, sort: $("sort").value });
  view.render(rows, list.rows, list.size);
  queueLinks(view.shown);
}

/** The answer about a file's link while it is fresh: `{url}` (`null` when it was refused), else `null`. */
function freshEntry(gid) {
  const link = links.get(gid);
  return link && link.until > Date.now() ? link : null;
}

function freshLink(gid) {
  return freshEntry(gid)?.url ?? null;
}

/** A click on a finished file: a link made now (the one shown may be old), then the download. */
async function openFile(gid) {
  try {
    const url = await client.call("swoop.getFileLink", gid);
    links.set(gid, { url, until: Date.now() + 20 * 60 * 1000 });
    location.assign(url);
  } catch (error) {
    $("connection").textContent = error.message;
  }
}

/** Asks for links to the finished files shown (links last an hour; asked again after 50 minutes). */
function queueLinks(rows) {
  if (linksQueued || !client) return;
  const wanted = rows.filter((row) => row.state === "complete" && !freshEntry(row.gid)).map((row) => row.gid);
  if (wanted.length === 0) return;
  linksQueued = true;
  client.multicall(wanted.map((gid) => ["swoop.getFileLink", gid])).then((answers) => {
    answers.forEach((answer, index) => {
      // A refusal is remembered for a minute: no asking again every frame.
      const url = typeof answer === "string" ? answer : null;
      links.set(wanted[index], { url, until: Date.now() + (url ? 20 : 1) * 60 * 1000 });
    });
    linksQueued = false;
    queueRender();
  }, () => {
    linksQueued = false;
  });
}

/** Runs calls in one message; the first error is shown. */
async function act(calls) {
  try {
    const answers = await client.multicall(calls);
    const failed = answers.find((answer) => answer instanceof Error);
    if (failed) $("connection").textContent = failed.message;
  } catch (error) {
    $("connection").textContent = error.message;
  }
  queueRefresh();
}

/** Removes downloads: running ones are stopped; finished results forgotten; with their files, those too. */
function remove(gids, withFiles) {
  const calls = gids.map((gid) => {
    if (withFiles) return ["swoop.removeWithFile", gid];
    const row = list.rows.get(gid);
    const stopped = row && (row.state === "complete" || row.state === "error" || row.state === "removed");
    return [stopped ? "aria2.removeDownloadResult" : "aria2.remove", gid];
  });
  for (const gid of gids) view.selected.delete(gid);
  return act(calls);
}

async function openDetails(gid) {
  try {
    showDetails($("details"), await client.call("swoop.getDetails", gid), history.get(gid) || []);
  } catch (error) {
    $("connection").textContent = error.message;
  }
}

async function loadLimits() {
  try {
    const options = await client.call("aria2.getGlobalOption");
    $("max-concurrent").value = options["max-concurrent-downloads"] || "";
    $("max-speed").value = sizeOption(options["max-overall-download-limit"] || "0") || "0";
  } catch (error) {
    $("limits-error").textContent = error.message;
  }
}

/** A field's text, trimmed. */
const value = (id) => $(id).value.trim();
/** A box's non-blank lines, trimmed. */
const lines = (id) => $(id).value.split("\n").map((line) => line.trim()).filter((line) => line.length > 0);

/** The aria2 options named by the fields that hold something: [[field id, option name]]. */
function optionsFrom(fields) {
  return Object.fromEntries(fields.filter(([id]) => value(id)).map(([id, name]) => [name, value(id)]));
}

async function applyLimits(event) {
  event.preventDefault();
  const options = optionsFrom([["max-concurrent", "max-concurrent-downloads"], ["max-speed", "max-overall-download-limit"]]);
  try {
    await client.call("aria2.changeGlobalOption", options);
    $("limits-error").textContent = "";
    await loadLimits();
  } catch (error) {
    $("limits-error").textContent = error.message;
  }
}

async function add(event) {
  event.preventDefault();
  if (!client) {
    $("add-error").textContent = "Not connected to the daemon.";
    return;
  }
  const urls = lines("urls");
  const headers = lines("add-headers");
  if (value("add-out") && urls.length > 1) {
    $("add-error").textContent = "A file name applies to one URL only.";
    return;
  }
  const options = optionsFrom([
    ["add-dir", "dir"], ["add-out", "out"], ["add-split", "split"], ["add-limit", "max-download-limit"], ["add-checksum", "checksum"],
  ]);
  if (headers.length > 0) options.header = headers;
  const answers = await client.multicall(urls.map((url) => ["aria2.addUri", [url], options])).catch((error) => urls.map(() => error));
  const failures = answers.map((answer, index) => (answer instanceof Error ? `${urls[index]}: ${answer.message}` : null)).filter(Boolean);
  $("add-error").textContent = failures.join("\n");
  if (failures.length === 0) {
    // The options were for these URLs: the next ones start from none (a name reused would become NAME.1).
    $("add").reset();
  }
  queueRefresh();
}

$("login").addEventListener("submit", (event) => {
  event.preventDefault();
  const token = $("token").value;
  sessionStorage.setItem("swoop.token", token);
  connect(token);
});
$("add").addEventListener("submit", add);
$("limits").addEventListener("submit", applyLimits);
$("pause-all").addEventListener("click", () => act([["aria2.pauseAll"]]));
$("resume-all").addEventListener("click", () => act([["aria2.unpauseAll"]]));
$("pause-selected").addEventListener("click", () => act([...view.selected].map((gid) => ["aria2.pause", gid])));
$("resume-selected").addEventListener("click", () => act([...view.selected].map((gid) => ["aria2.unpause", gid])));
$("remove-selected").addEventListener("click", () => {
  const gids = [...view.selected];
  if (gids.length === 0) return;
  const withFiles = $("with-files").checked;
  if (withFiles && !window.confirm(`Remove ${gids.length} download${gids.length === 1 ? "" : "s"} and delete ${gids.length === 1 ? "its file" : "their files"}?`)) return;
  remove(gids, withFiles);
});
$("details-close").addEventListener("click", () => $("details").close());
// Browser notifications when a download completes while the page is in the background: asked for
// only when the user clicks.
if ("Notification" in window && Notification.permission === "default") {
  $("notify").hidden = false;
  $("notify").addEventListener("click", () => Notification.requestPermission().then(() => { $("notify").hidden = true; }));
}
// Another view of the list starts at its first page.
for (const id of ["filter", "sort"]) $(id).addEventListener("change", () => view.show(0));
$("search").addEventListener("input", () => view.show(0));
setInterval(pollActive, 1000);
// The whole list now and then: what no notification announces (another client's add, a move).
setInterval(refresh, 15000);
// Links shown are kept fresh even when nothing else changes.
setInterval(queueRender, 60 * 1000);

// A link with another token opened in this tab changes only the address's fragment.
window.addEventListener("hashchange", () => {
  if (/(?:^#|&)token=/.test(location.hash)) connect(takeToken());
});

const token = takeToken();
if (token) connect(token);
else showLogin();
