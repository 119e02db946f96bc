#!/usr/bin/env node
"use strict";
// A minimal JSON-RPC peer for transport unit tests (not tipsd): `echo-daemon.js serve --stdio` or
// `echo-daemon.js serve --socket PATH`. Answers initialize, echoes every other request as
// {method, params, framing}, pushes a notification on "push", exits/closes on "exit". Its serverInfo name,
// "fake-tipsd", makes the traffic check skip its connections (see FAKE_SERVER_NAME in fake.js).
const net = require("node:net");
const fs = require("node:fs");
const { FrameDecoder, encodeFrame } = require("../dist/framing");

function peer(write, end, onExit) {
  const decoder = new FrameDecoder();
  let shutdown = false;
  return (chunk) => {
    for (const text of decoder.push(chunk)) {
      const framing = decoder.framing;
      const send = (m) => write(encodeFrame(JSON.stringify(m), framing));
      const m = JSON.parse(text);
      if (m.method === "exit") return onExit(shutdown ? 0 : 1);
      if (m.id === undefined) continue;
      if (m.method === "initialize") {
        send({ jsonrpc: "2.0", id: m.id, result: { protocolVersion: "1.0", serverInfo: { name: "fake-tipsd", version: "0" }, capabilities: {} } });
      } else {
        if (m.method === "shutdown") shutdown = true;
        if (m.method === "push") send({ jsonrpc: "2.0", method: "tips/actionPerformed", params: { subscription: "x", seq: 1, tipId: "t", actions: [] } });
        if (m.method === "crash") process.exit(3);
        send({ jsonrpc: "2.0", id: m.id, result: { method: m.method, params: m.params === undefined ? null : m.params, framing, unicode: "é🔎" } });
      }
    }
  };
}

const args = process.argv.slice(2);
if (args.includes("--stdio")) {
  const feed = peer((b) => process.stdout.write(b), () => {}, (code) => process.exit(code));
  process.stdin.on("data", feed);
  process.stdin.on("end", () => process.exit(0));
  process.stderr.write("echo-daemon: stdio ready\n");
} else {
  const path = args[args.indexOf("--socket") + 1];
  try {
    fs.unlinkSync(path);
  } catch {}
  net
    .createServer((socket) => {
      const feed = peer((b) => socket.write(b), () => socket.end(), () => socket.end());
      socket.on("data", feed);
      socket.on("error", () => {});
    })
    .listen(path);
  process.on("SIGTERM", () => process.exit(0));
}
