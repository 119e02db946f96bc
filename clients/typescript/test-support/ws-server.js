"use strict";
// A minimal RFC 6455 WebSocket server in front of a transport factory (e.g. FakeDaemon.factory), behaving like
// `tipsd serve --listen` at the edges the client sees: an upgrade must present the token as the subprotocol
// `tipsd.token.<token>` (with `tipsd.v1`, which is selected) or as `Authorization: Bearer <token>`, else HTTP 401
// before any upgrade; one JSON-RPC message per text frame; ping → pong; a binary frame → close 1003.
// It lets the unit tests drive a real WebSocket client implementation (Node's global WebSocket: Node >= 22, or
// Node 20 with --experimental-websocket). It is not the daemon: the real listener is tested against tipsd itself.
const http = require("node:http");
const crypto = require("node:crypto");

const GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";

function encodeFrame(opcode, payload) {
  const len = payload.length;
  let header;
  if (len < 126) header = Buffer.from([0x80 | opcode, len]);
  else if (len < 65536) {
    header = Buffer.alloc(4);
    header[0] = 0x80 | opcode;
    header[1] = 126;
    header.writeUInt16BE(len, 2);
  } else {
    header = Buffer.alloc(10);
    header[0] = 0x80 | opcode;
    header[1] = 127;
    header.writeBigUInt64BE(BigInt(len), 2);
  }
  return Buffer.concat([header, payload]);
}

/** One upgraded connection: frames in (masked, possibly fragmented), frames out (unmasked). */
class WsConnection {
  constructor(socket, { onText, onClose }) {
    this.socket = socket;
    this.onText = onText;
    this.onClose = onClose;
    this.buffer = Buffer.alloc(0);
    this.fragments = null;
    this.closed = false;
    this.received = []; // text frames from the client, as received
    socket.on("data", (chunk) => this.data(chunk));
    socket.on("error", () => {});
    socket.on("close", () => this.gone());
  }

  data(chunk) {
    this.buffer = Buffer.concat([this.buffer, chunk]);
    for (;;) {
      const b = this.buffer;
      if (b.length < 2) return;
      const fin = (b[0] & 0x80) !== 0;
      const opcode = b[0] & 0x0f;
      const masked = (b[1] & 0x80) !== 0;
      let len = b[1] & 0x7f;
      let off = 2;
      if (len === 126) {
        if (b.length < 4) return;
        len = b.readUInt16BE(2);
        off = 4;
      } else if (len === 127) {
        if (b.length < 10) return;
        len = Number(b.readBigUInt64BE(2));
        off = 10;
      }
      const maskAt = off;
      if (masked) off += 4;
      if (b.length < off + len) return;
      const payload = Buffer.from(b.subarray(off, off + len));
      if (masked) for (let i = 0; i < payload.length; i++) payload[i] ^= b[maskAt + (i % 4)];
      this.buffer = b.subarray(off + len);
      this.frame(fin, opcode, payload);
    }
  }

  frame(fin, opcode, payload) {
    if (opcode === 0x9) return this.write(0xa, payload); // ping → pong
    if (opcode === 0xa) return;
    if (opcode === 0x8) {
      if (!this.closed) this.write(0x8, payload.subarray(0, 2));
      this.socket.end();
      return;
    }
    if (opcode === 0x1) this.fragments = [payload];
    else if (opcode === 0x0 && this.fragments) this.fragments.push(payload);
    else return this.close(1003, "binary frames are not accepted");
    if (!fin) return;
    const text = Buffer.concat(this.fragments).toString("utf8");
    this.fragments = null;
    this.received.push(text);
    this.onText(text);
  }

  write(opcode, payload) {
    if (!this.socket.destroyed && this.socket.writable) this.socket.write(encodeFrame(opcode, payload));
  }

  /** Sends one text frame. */
  sendText(text) {
    if (!this.closed) this.write(0x1, Buffer.from(text, "utf8"));
  }

  /** Sends a close frame with `code` and `reason`, then ends the TCP connection. */
  close(code = 1000, reason = "") {
    if (this.closed) return;
    const payload = Buffer.alloc(2 + Buffer.byteLength(reason));
    payload.writeUInt16BE(code, 0);
    payload.write(reason, 2);
    this.write(0x8, payload);
    this.socket.end();
    this.gone();
  }

  /** Drops the TCP connection without a close frame (a crash: the client sees 1006). */
  drop() {
    this.socket.destroy();
    this.gone();
  }

  gone() {
    if (this.closed) return;
    this.closed = true;
    this.onClose();
  }
}

/**
 * Starts the server on 127.0.0.1 (an ephemeral port). `backend()` opens one transport-shaped connection
 * (`send`, `onMessage`, `onClose`, `close`) per WebSocket. Returns `{url, port, handshakes, connections,
 * close()}`: `handshakes` records each upgrade request's path, offered subprotocols and Authorization header.
 */
async function startWebSocketServer({ token, backend }) {
  const handshakes = [];
  const connections = new Set();
  const server = http.createServer((req, res) => {
    res.writeHead(426, { "content-type": "text/plain" });
    res.end("WebSocket only\n");
  });
  const raw = new Set();
  server.on("connection", (s) => {
    raw.add(s);
    s.on("close", () => raw.delete(s));
  });
  server.on("upgrade", (req, socket) => {
    const offered = String(req.headers["sec-websocket-protocol"] || "")
      .split(",")
      .map((p) => p.trim())
      .filter(Boolean);
    const authorization = req.headers.authorization;
    handshakes.push({ path: req.url, protocols: offered, authorization });
    const ok = offered.includes(`tipsd.token.${token}`) || authorization === `Bearer ${token}`;
    if (!ok) {
      socket.end('HTTP/1.1 401 Unauthorized\r\nContent-Type: application/json\r\nContent-Length: 26\r\nConnection: close\r\n\r\n{"error":"unauthorized"}\r\n');
      return;
    }
    const accept = crypto.createHash("sha1").update(String(req.headers["sec-websocket-key"]) + GUID).digest("base64");
    const lines = ["HTTP/1.1 101 Switching Protocols", "Upgrade: websocket", "Connection: Upgrade", `Sec-WebSocket-Accept: ${accept}`];
    if (offered.includes("tipsd.v1")) lines.push("Sec-WebSocket-Protocol: tipsd.v1");
    socket.write(lines.join("\r\n") + "\r\n\r\n");
    let peer = null;
    const early = [];
    const conn = new WsConnection(socket, {
      onText: (text) => (peer ? peer.send(text) : early.push(text)),
      onClose: () => {
        connections.delete(conn);
        if (peer) peer.close();
      },
    });
    connections.add(conn);
    Promise.resolve(backend()).then((transport) => {
      if (conn.closed) return transport.close();
      peer = transport;
      transport.onMessage = (text) => conn.sendText(text);
      transport.onClose = () => conn.drop();
      for (const text of early.splice(0)) transport.send(text);
    }, () => conn.close(1011, "backend unavailable"));
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = server.address().port;
  return {
    port,
    url: `ws://127.0.0.1:${port}/`,
    handshakes,
    connections,
    close() {
      for (const c of [...connections]) c.drop();
      for (const s of raw) s.destroy();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

module.exports = { startWebSocketServer };
