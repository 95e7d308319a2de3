import { bytes, duration, eta, nodeCells, percent, rate, sizeOption, stateWord } from "/ui/format.js";
import { equal, test } from "./harness.js";

test("bytes: binary units, three significant digits", () => {
  equal(bytes(0), "0 B");
  equal(bytes(1023), "1023 B");
  equal(bytes(1024), "1.00 KiB");
  equal(bytes(1536), "1.50 KiB");
  equal(bytes(10 * 1024 * 1024), "10.0 MiB");
  equal(bytes(256 * 1024 * 1024), "256 MiB");
  equal(bytes(5 * 2 ** 40), "5.00 TiB");
  equal(bytes("1048576"), "1.00 MiB", "aria2's numbers are strings");
  equal(bytes(-1), "?");
  equal(bytes("x"), "?");
});

test("rate: per second, nothing moving is 0 B/s", () => {
  equal(rate(2 * 1024 * 1024), "2.00 MiB/s");
  equal(rate("0"), "0 B/s");
  equal(rate(undefined), "0 B/s");
});

test("duration and ETA", () => {
  equal(duration(0), "0s");
  equal(duration(44.2), "45s");
  equal(duration(185), "3m 05s");
  equal(duration(7620), "2h 07m");
  equal(duration(3 * 86400 + 4 * 3600), "3d 04h");
  equal(duration(-1), "—");
  equal(eta(0, 100, 10), "10s");
  equal(eta(50, 100, 0), "—", "no speed");
  equal(eta(50, 0, 10), "—", "no size");
  equal(eta(100, 100, 10), "—", "done");
});

test("percent: floored, unknown size is null", () => {
  equal(percent(0, 100), 0);
  equal(percent(999, 1000), 99, "99.9% is not yet 100");
  equal(percent(1000, 1000), 100);
  equal(percent(5, 0), null);
});

test("sizeOption writes sizes as aria2 does; stateWord names states one way", () => {
  equal(sizeOption("204800"), "200K");
  equal(sizeOption(10 * 1024 * 1024), "10M");
  equal(sizeOption("1000"), "1000");
  equal(sizeOption("0"), "0");
  equal([stateWord("error"), stateWord("failed"), stateWord("completed"), stateWord("complete"), stateWord("paused")],
    ["failed", "failed", "complete", "complete", "paused"]);
});

test("nodeCells: a fleet's node as its row", () => {
  const node = { name: "lab-1", address: "10.0.0.2:6800", numActive: "3", downloadSpeed: "2097152", silentFor: "0" };
  equal(nodeCells(node).join("|"), "lab-1|10.0.0.2:6800|3|2.00 MiB/s|now");
  equal(nodeCells({ ...node, silentFor: "185", address: "" }).join("|"), "lab-1|—|3|2.00 MiB/s|3m 05s ago");
  equal(nodeCells({ name: "x" }).join("|"), "x|—|0|0 B/s|—");
});
