import { run } from "./harness.js";
import "./format.test.js";
import "./model.test.js";
import "./rpc.test.js";

run().then((results) => {
  window.__results = results;
  document.getElementById("out").textContent = results.map((r) => `${r.ok ? "ok" : "FAIL"} ${r.name}${r.ok ? "" : `\n${r.error}`}`).join("\n");
});
