// aria2's JSON-RPC over the daemon's WebSocket: calls with the secret, answers matched by id,
// notifications handed on. No DOM; tested in Tests/Web/rpc.test.js with a stand-in socket.

/** An error answer: `code` and `message` as the daemon sent them (code 1 "Unauthorized" for a wrong secret). */
export class RPCError extends Error {
  constructor(code, message) {
    super(message);
    this.name = "RPCError";
    this.code = code;
  }
}

const tokenless = new Set(["system.listMethods", "system.listNotifications"]);

/** The WebSocket address of the daemon that served `location` (ws: or wss: to match). */
export function socketURL(location) {
  return `${location.protocol === "https:" ? "wss:" : "ws:"}//${location.host}/jsonrpc`;
}

export class RPCClient {
  /**
   * @param url The daemon's `ws://host:port/jsonrpc`.
   * @param token The RPC secret.
   * @param options `WebSocket`: the socket class (a stand-in in tests); `timeout`: ms a call may wait.
   */
  constructor(url, token, { WebSocket = globalThis.WebSocket, timeout = 30000 } = {}) {
    this.url = url;
    this.token = token;
    this.SocketClass = WebSocket;
    this.timeout = timeout;
    this.nextID = 1;
    this.pending = new Map();
    this.socket = null;
    /** Called with (method, params) for each notification. */
    this.onNotification = null;
    /** Called once when an open socket closes. */
    this.onClose = null;
  }

  /** Opens the socket; resolves once it is open, rejects if it cannot be. */
  open() {
    return new Promise((resolve, reject) => {
      const socket = new this.SocketClass(this.url);
      this.socket = socket;
      let opened = false;
      socket.onopen = () => {
        opened = true;
        resolve();
      };
      socket.onmessage = (event) => this.receive(event.data);
      // An error is always followed by a close, which says it.
      socket.onclose = () => {
        this.failAll(new Error("the connection to the daemon closed"));
        if (!opened) reject(new Error(`cannot connect to ${this.url}`));
        else if (this.onClose) this.onClose();
      };
    });
  }

  close() {
    if (this.socket) this.socket.close();
  }

  /** Sends one call; resolves with its result, rejects with an RPCError. */
  call(method, ...params) {
    return this.send({ method, params: this.withToken(method, params) });
  }

  /** Several calls in one message (system.multicall); resolves with each one's result or RPCError. */
  async multicall(calls) {
    const inner = calls.map(([method, ...params]) => ({ methodName: method, params: this.withToken(method, params) }));
    const results = await this.send({ method: "system.multicall", params: [inner] });
    return results.map((entry) => (Array.isArray(entry) ? entry[0] : new RPCError(entry.code, entry.message)));
  }

  withToken(method, params) {
    return tokenless.has(method) ? params : [`token:${this.token}`, ...params];
  }

  send(message) {
    if (!this.socket || this.socket.readyState !== 1) {
      return Promise.reject(new Error("not connected to the daemon"));
    }
    const id = String(this.nextID++);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new Error(`${message.method}: no answer within ${this.timeout / 1000} s`));
      }, this.timeout);
      this.pending.set(id, { resolve, reject, timer });
      this.socket.send(JSON.stringify({ jsonrpc: "2.0", id, ...message }));
    });
  }

  receive(text) {
    let message;
    try {
      message = JSON.parse(text);
    } catch {
      return;
    }
    if (message.id === undefined || message.id === null) {
      if (typeof message.method === "string" && this.onNotification) this.onNotification(message.method, message.params || []);
      return;
    }
    const waiting = this.pending.get(String(message.id));
    if (!waiting) return;
    this.pending.delete(String(message.id));
    clearTimeout(waiting.timer);
    if (message.error) waiting.reject(new RPCError(message.error.code, message.error.message));
    else waiting.resolve(message.result);
  }

  failAll(error) {
    for (const { reject, timer } of this.pending.values()) {
      clearTimeout(timer);
      reject(error);
    }
    this.pending.clear();
  }
}
