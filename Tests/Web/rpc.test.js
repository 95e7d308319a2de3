import { RPCClient, RPCError, socketURL } from "/ui/rpc.js";
import { equal, ok, rejects, test } from "./harness.js";

/** A stand-in WebSocket: records what is sent; the test answers with `reply`. */
class FakeSocket {
  static last = null;
  constructor(url) {
    this.url = url;
    this.readyState = 0;
    this.sent = [];
    FakeSocket.last = this;
    setTimeout(() => {
      this.readyState = 1;
      this.onopen && this.onopen();
    }, 0);
  }
  send(text) { this.sent.push(JSON.parse(text)); }
  reply(message) { this.onmessage({ data: JSON.stringify(message) }); }
  close() {
    this.readyState = 3;
    this.onclose && this.onclose();
  }
}

async function connected() {
  const client = new RPCClient("ws://h/jsonrpc", "s3cret", { WebSocket: FakeSocket, timeout: 200 });
  await client.open();
  return { client, socket: FakeSocket.last };
}

test("socketURL follows the page's scheme and host", () => {
  equal(socketURL({ protocol: "http:", host: "127.0.0.1:6800" }), "ws://127.0.0.1:6800/jsonrpc");
  equal(socketURL({ protocol: "https:", host: "box" }), "wss://box/jsonrpc");
});

test("calls carry the token first (not system.listMethods) and resolve by id", async () => {
  const { client, socket } = await connected();
  const version = client.call("aria2.getVersion");
  const methods = client.call("system.listMethods");
  equal(socket.sent[0], { jsonrpc: "2.0", id: "1", method: "aria2.getVersion", params: ["token:s3cret"] });
  equal(socket.sent[1].params, []);
  socket.reply({ jsonrpc: "2.0", id: "2", result: ["aria2.addUri"] });
  socket.reply({ jsonrpc: "2.0", id: "1", result: { version: "1.37.0" } });
  equal(await version, { version: "1.37.0" });
  equal(await methods, ["aria2.addUri"]);
});

test("an error answer rejects with its code and message", async () => {
  const { client, socket } = await connected();
  const call = client.call("aria2.tellStatus", "0000000000000001");
  socket.reply({ jsonrpc: "2.0", id: "1", error: { code: 1, message: "Unauthorized" } });
  await rejects(call, (error) => {
    ok(error instanceof RPCError, "an RPCError");
    equal([error.code, error.message], [1, "Unauthorized"]);
  }, "an error answer");
});

test("multicall: a token in each inner call, results and faults apart", async () => {
  const { client, socket } = await connected();
  const results = client.multicall([["aria2.tellActive", ["gid"]], ["aria2.getGlobalStat"]]);
  equal(socket.sent[0].method, "system.multicall");
  equal(socket.sent[0].params, [[
    { methodName: "aria2.tellActive", params: ["token:s3cret", ["gid"]] },
    { methodName: "aria2.getGlobalStat", params: ["token:s3cret"] },
  ]]);
  socket.reply({ jsonrpc: "2.0", id: "1", result: [[[{ gid: "a" }]], { code: 1, message: "Unauthorized" }] });
  const [active, stat] = await results;
  equal(active, [{ gid: "a" }]);
  ok(stat instanceof RPCError && stat.code === 1, "a fault is an RPCError");
});

test("notifications are handed on; junk is ignored", async () => {
  const { client, socket } = await connected();
  const seen = [];
  client.onNotification = (method, params) => seen.push([method, params]);
  socket.onmessage({ data: "not json" });
  socket.reply({ jsonrpc: "2.0", method: "aria2.onDownloadComplete", params: [{ gid: "a" }] });
  socket.reply({ jsonrpc: "2.0", id: "99", result: 1 });
  equal(seen, [["aria2.onDownloadComplete", [{ gid: "a" }]]]);
});

test("a lost connection fails the calls waiting, and a silent daemon times out", async () => {
  const { client, socket } = await connected();
  let closed = false;
  client.onClose = () => { closed = true; };
  const waiting = client.call("aria2.getVersion");
  socket.close();
  await rejects(waiting, (error) => ok(/closed/.test(error.message), "says the connection closed"), "lost connection");
  ok(closed, "onClose called");
  await rejects(client.call("aria2.getVersion"), (error) => ok(/not connected/.test(error.message), "not connected"), "after close");
  const again = await connected();
  await rejects(again.client.call("aria2.getVersion"), (error) => ok(/no answer within/.test(error.message), "timeout"), "timeout");
});
