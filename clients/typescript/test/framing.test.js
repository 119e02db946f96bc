"use strict";
const test = require("node:test");
const assert = require("node:assert/strict");
const { encodeNewline, encodeContentLength, encodeFrame, FrameDecoder, FramingError } = require("../dist/framing");
const { jsEncode, jsDecode, utf8Encode, utf8Decode } = require("../dist/utf8");

const enc = (s) => new TextEncoder().encode(s);
const messages = [
  { jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "1.0", clientInfo: { name: "t" } } },
  { jsonrpc: "2.0", id: 2, result: { title: "Filtrer les résultats — 絞り込み 🔎", lines: ["a\nb"] } },
  { jsonrpc: "2.0", method: "tips/shouldDisplayChanged", params: { subscription: "s", seq: 1, id: "filter.tip", shouldDisplay: true } },
];
const texts = messages.map((m) => JSON.stringify(m));

function concat(parts) {
  const total = parts.reduce((n, p) => n + p.length, 0);
  const out = new Uint8Array(total);
  let o = 0;
  for (const p of parts) {
    out.set(p, o);
    o += p.length;
  }
  return out;
}

test("encodeNewline appends one newline; encodeContentLength counts UTF-8 bytes", () => {
  assert.equal(new TextDecoder().decode(encodeNewline('{"a":1}')), '{"a":1}\n');
  const framed = new TextDecoder().decode(encodeContentLength('{"t":"é🔎"}'));
  const body = '{"t":"é🔎"}';
  assert.equal(framed, `Content-Length: ${enc(body).length}\r\n\r\n${body}`);
  assert.equal(enc(body).length, 14);
  assert.deepEqual(encodeFrame("{}", "newline"), encodeNewline("{}"));
  assert.deepEqual(encodeFrame("{}", "contentLength"), encodeContentLength("{}"));
});

for (const framing of ["newline", "contentLength"]) {
  test(`${framing}: decodes messages split at every possible byte boundary`, () => {
    const stream = concat(texts.map((t) => encodeFrame(t, framing)));
    for (let cut = 0; cut <= stream.length; cut++) {
      const d = new FrameDecoder();
      const got = [...d.push(stream.subarray(0, cut)), ...d.push(stream.subarray(cut))];
      assert.deepEqual(got, texts, `cut at ${cut}`);
      assert.equal(d.framing, framing);
      assert.equal(d.buffered, 0);
    }
  });

  test(`${framing}: decodes a stream fed one byte at a time, and a stream in one chunk`, () => {
    const stream = concat(texts.map((t) => encodeFrame(t, framing)));
    const d = new FrameDecoder({ framing });
    const got = [];
    for (let i = 0; i < stream.length; i++) got.push(...d.push(stream.subarray(i, i + 1)));
    assert.deepEqual(got, texts);
    assert.deepEqual(new FrameDecoder().push(stream), texts);
  });

  test(`${framing}: many messages and a large one`, () => {
    const big = JSON.stringify({ jsonrpc: "2.0", id: 9, result: { blob: "x".repeat(200_000) + "é" } });
    const all = [];
    for (let i = 0; i < 500; i++) all.push(JSON.stringify({ jsonrpc: "2.0", id: i, result: { i } }));
    all.push(big);
    const stream = concat(all.map((t) => encodeFrame(t, framing)));
    const d = new FrameDecoder();
    const got = [];
    for (let i = 0; i < stream.length; i += 4093) got.push(...d.push(stream.subarray(i, i + 4093)));
    assert.deepEqual(got, all);
  });
}

test("newline: tolerates \\r\\n, skips blank lines and leading whitespace", () => {
  const d = new FrameDecoder();
  assert.deepEqual(d.push(enc('\r\n\n  {"a":1}\r\n\n   \n{"b":2}\n[1]\n')), ['{"a":1}', '{"b":2}', "[1]"]);
  assert.equal(d.framing, "newline");
});

test("contentLength: other headers ignored, header name case-insensitive, blank lines between messages", () => {
  const d = new FrameDecoder();
  const s = 'Content-Type: application/vscode-jsonrpc; charset=utf-8\r\ncontent-length: 7\r\n\r\n{"a":1}\r\nContent-Length:7\r\n\r\n{"b":2}';
  assert.deepEqual(d.push(enc(s)), ['{"a":1}', '{"b":2}']);
  assert.equal(d.framing, "contentLength");
});

test("decoder errors: undetectable first byte, missing or bad Content-Length, oversize messages", () => {
  assert.throws(() => new FrameDecoder().push(enc("hello\n")), FramingError);
  assert.throws(() => new FrameDecoder().push(enc("Content-Type: x\r\n\r\n{}")), /without Content-Length/);
  assert.throws(() => new FrameDecoder().push(enc("Content-Length: -3\r\n\r\n")), /invalid Content-Length/);
  assert.throws(() => new FrameDecoder().push(enc("Content-Length 3\r\n\r\n")), /malformed header/);
  assert.throws(() => new FrameDecoder({ maxMessageSize: 10 }).push(enc("Content-Length: 11\r\n\r\n")), /exceeds/);
  assert.throws(() => new FrameDecoder({ maxMessageSize: 10 }).push(enc('{"a":"0123456789"')), /exceeds/);
  assert.deepEqual(new FrameDecoder({ maxMessageSize: 10 }).push(enc('{"a":"01"}\n')), ['{"a":"01"}']);
});

test("a fixed framing does not auto-detect", () => {
  const d = new FrameDecoder({ framing: "contentLength" });
  assert.deepEqual(d.push(enc('Content-Length: 2\r\n\r\n{}')), ["{}"]);
  const n = new FrameDecoder({ framing: "newline" });
  assert.deepEqual(n.push(enc("{}\n")), ["{}"]);
});

test("pure-JS UTF-8 codec agrees with TextEncoder/TextDecoder, including invalid input", () => {
  const samples = ["", "ascii", "é", "€", "絞り込み", "🔎🙂", "a\u0000b", "\ud800", "x\udc00y", "mix é€🔎 end"];
  for (const s of samples) {
    assert.deepEqual([...jsEncode(s)], [...new TextEncoder().encode(s)], JSON.stringify(s));
    assert.equal(jsDecode(new TextEncoder().encode(s)), new TextDecoder().decode(new TextEncoder().encode(s)));
    assert.equal(utf8Decode(utf8Encode(s)), new TextDecoder().decode(new TextEncoder().encode(s)));
  }
  const invalid = [[0xff], [0xc3], [0xe2, 0x82], [0xed, 0xa0, 0x80], [0xf0, 0x9f, 0x94], [0xc0, 0xaf], [0x61, 0x80, 0x62]];
  for (const bytes of invalid) {
    const b = Uint8Array.from(bytes);
    assert.equal(jsDecode(b).replace(/\ufffd+/g, "?"), new TextDecoder().decode(b).replace(/\ufffd+/g, "?"), bytes.join(","));
  }
});
