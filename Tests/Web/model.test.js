import { DownloadList, SpeedHistory, page, row } from "/ui/model.js";
import { equal, ok, test } from "./harness.js";

function status(gid, state, extra = {}) {
  return {
    gid, status: state, totalLength: "1000", completedLength: "250", downloadSpeed: "100", connections: "2",
    dir: "/d", files: [{ path: `/d/${gid}.bin`, uris: [{ uri: `http://h/${gid}.bin?sig=1`, status: "used" }] }], ...extra,
  };
}

test("row: numbers from strings, the name from the path, else the URL", () => {
  const r = row(status("a", "active"));
  equal([r.name, r.url, r.total, r.done, r.speed, r.connections], ["a.bin", "http://h/a.bin?sig=1", 1000, 250, 100, 2]);
  const noPath = row(status("b", "waiting", { files: [{ path: "", uris: [{ uri: "http://h/dir/my%20file.iso?x=1" }] }] }));
  equal(noPath.name, "my file.iso");
  equal(row({ gid: "c", status: "error", errorMessage: "HTTP 404 Not Found" }).name, "c");
  equal(row({ gid: "c", status: "error", errorMessage: "HTTP 404 Not Found" }).error, "HTTP 404 Not Found");
});

test("replace keeps the daemon's order and reports changes", () => {
  const list = new DownloadList();
  ok(list.replace([status("a", "active"), status("b", "waiting"), status("c", "complete")]), "first fill changes");
  equal(list.view().map((r) => r.gid), ["a", "b", "c"]);
  ok(!list.replace([status("a", "active"), status("b", "waiting"), status("c", "complete")]), "the same again does not");
  ok(list.replace([status("b", "active"), status("c", "complete")]), "a removal changes");
  equal(list.size, 2);
  ok(!list.replace([status("b", "active"), status("b", "active"), null, { gid: 5 }, status("c", "complete")]), "duplicates and junk are ignored");
});

test("update changes rows in place and adds unknown ones", () => {
  const list = new DownloadList();
  list.replace([status("a", "active"), status("b", "waiting")]);
  ok(list.update([status("a", "active", { completedLength: "500" })]), "progress changes");
  equal(list.rows.get("a").done, 500);
  ok(!list.update([status("a", "active", { completedLength: "500" })]), "no change");
  ok(list.update([status("z", "active")]), "a new one");
  equal(list.view().map((r) => r.gid), ["a", "b", "z"]);
  ok(list.remove("b") && !list.remove("b"), "remove once");
});

test("view filters by state, searches name and URL, sorts", () => {
  const list = new DownloadList();
  list.replace([
    status("alpha", "active", { completedLength: "100", downloadSpeed: "5" }),
    status("beta", "paused", { completedLength: "900", downloadSpeed: "0" }),
    status("gamma", "complete", { completedLength: "1000", totalLength: "1000", downloadSpeed: "0" }),
    status("delta", "active", { completedLength: "500", downloadSpeed: "50", totalLength: "9000" }),
  ]);
  equal(list.view({ state: "active" }).map((r) => r.gid), ["alpha", "delta"]);
  equal(list.view({ search: "ALP" }).map((r) => r.gid), ["alpha"]);
  equal(list.view({ search: "h/beta" }).map((r) => r.gid), ["beta"], "the URL is searched too");
  equal(list.view({ sort: "name" }).map((r) => r.gid), ["alpha", "beta", "delta", "gamma"]);
  equal(list.view({ sort: "progress" }).map((r) => r.gid), ["gamma", "beta", "alpha", "delta"]);
  equal(list.view({ sort: "speed" })[0].gid, "delta");
  equal(list.view({ sort: "size" })[0].gid, "delta");
  equal(list.counts().active, 2);
  equal(list.counts().complete, 1);
});

// How fast is for scripts/bench-page.py; here only that ten thousand are handled right.
test("ten thousand downloads: counted, searched and paged", () => {
  const list = new DownloadList();
  const many = Array.from({ length: 10000 }, (_, i) => status(`g${i}`, i < 16 ? "active" : "waiting"));
  ok(list.replace(many), "filled");
  equal(list.size, 10000);
  equal(list.counts().active, 16);
  equal(list.view({ search: "g99" }).length, 111);
  equal(page(list.size, 99, 100), { index: 99, pages: 100, start: 9900, end: 10000 });
});

test("page: bounds kept in range", () => {
  equal(page(0, 0, 100), { index: 0, pages: 1, start: 0, end: 0 });
  equal(page(250, 1, 100), { index: 1, pages: 3, start: 100, end: 200 });
  equal(page(250, 9, 100), { index: 2, pages: 3, start: 200, end: 250 }, "past the end: the last page");
  equal(page(250, -3, 100).index, 0);
  equal(page(100, 1, 100).index, 0, "exactly one page");
});

test("speed history: newest last, the fastest at the top, bounded", () => {
  const history = new SpeedHistory(3);
  equal(history.points(300, 60), "");
  history.add(0);
  history.add(50);
  history.add(100);
  history.add("200");
  equal(history.samples, [50, 100, 200]);
  equal(history.points(300, 60), "0.0,45.0 150.0,30.0 300.0,0.0");
  const short = new SpeedHistory(5);
  short.add(10);
  equal(short.points(100, 10), "100.0,0.0", "a lone sample sits at the right edge");
});
