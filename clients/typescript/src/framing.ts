/**
 * The two framings tipsd speaks on byte streams (Unix socket, stdio):
 *
 * - **newline**: one JSON message per line, `\n`-terminated (a trailing `\r` is tolerated, blank lines ignored);
 * - **contentLength** (LSP style): `Content-Length: N\r\n` (other headers ignored) `\r\n` then N bytes of JSON.
 *
 * Encoders turn one JSON text into framed bytes; {@link FrameDecoder} turns an arbitrarily chunked byte stream
 * back into JSON texts. Everything works on `Uint8Array` (a Node `Buffer` is one) so the module runs anywhere.
 */
import { utf8Decode, utf8Encode } from "./utf8.js";

export type Framing = "newline" | "contentLength";

/** Raised by {@link FrameDecoder} when the stream cannot be a valid framing; the connection should be closed. */
export class FramingError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "FramingError";
  }
}

const LF = 0x0a;
const CR = 0x0d;

/** Frames one JSON text with a trailing newline. The text must not contain a raw newline (JSON.stringify never emits one). */
export function encodeNewline(json: string): Uint8Array {
  return utf8Encode(json + "\n");
}

/** Frames one JSON text with a `Content-Length` header (the byte length of its UTF-8 encoding). */
export function encodeContentLength(json: string): Uint8Array {
  const body = utf8Encode(json);
  const header = utf8Encode(`Content-Length: ${body.length}\r\n\r\n`);
  const out = new Uint8Array(header.length + body.length);
  out.set(header, 0);
  out.set(body, header.length);
  return out;
}

export function encodeFrame(json: string, framing: Framing): Uint8Array {
  return framing === "newline" ? encodeNewline(json) : encodeContentLength(json);
}

export interface FrameDecoderOptions {
  /** `"auto"` (default) detects the framing from the first non-blank byte, as the daemon does. */
  framing?: Framing | "auto";
  /** Largest accepted message body in bytes (default 16 MiB). */
  maxMessageSize?: number;
  /** Largest accepted Content-Length header block in bytes (default 8 KiB). */
  maxHeaderSize?: number;
}

/**
 * A streaming decoder: `push` any chunk of bytes, get back every message it completed (as JSON text, not yet
 * parsed). Chunks may split messages, headers and UTF-8 sequences anywhere.
 */
export class FrameDecoder {
  private buf = new Uint8Array(4096);
  private start = 0;
  private end = 0;
  /** Where the next newline search begins (so a long partial line is not rescanned on every chunk). */
  private scan = 0;
  /** Content-Length of the message whose headers were read and whose body is awaited. */
  private bodyLength = -1;
  private mode: Framing | undefined;
  private readonly maxMessageSize: number;
  private readonly maxHeaderSize: number;

  constructor(options: FrameDecoderOptions = {}) {
    this.mode = options.framing === undefined || options.framing === "auto" ? undefined : options.framing;
    this.maxMessageSize = options.maxMessageSize ?? 16 * 1024 * 1024;
    this.maxHeaderSize = options.maxHeaderSize ?? 8 * 1024;
  }

  /** The framing in use (undefined until detected in auto mode). */
  get framing(): Framing | undefined {
    return this.mode;
  }

  /** Bytes received but not yet part of a complete message. */
  get buffered(): number {
    return this.end - this.start;
  }

  push(chunk: Uint8Array): string[] {
    this.append(chunk);
    const out: string[] = [];
    for (;;) {
      if (this.mode === undefined && !this.detect()) break;
      const message = this.mode === "newline" ? this.nextLine() : this.nextContentLength();
      if (message === undefined) break;
      if (message !== null) out.push(message);
    }
    if (this.start === this.end) {
      this.start = this.end = this.scan = 0;
    }
    return out;
  }

  private append(chunk: Uint8Array): void {
    if (chunk.length === 0) return;
    if (this.end + chunk.length > this.buf.length) {
      const live = this.end - this.start;
      const needed = live + chunk.length;
      if (needed > this.buf.length) {
        let size = this.buf.length;
        while (size < needed) size *= 2;
        const next = new Uint8Array(size);
        next.set(this.buf.subarray(this.start, this.end), 0);
        this.buf = next;
      } else {
        this.buf.copyWithin(0, this.start, this.end);
      }
      this.scan -= this.start;
      this.start = 0;
      this.end = live;
    }
    this.buf.set(chunk, this.end);
    this.end += chunk.length;
  }

  /** Skips leading blank bytes and decides the framing; false while no significant byte has arrived. */
  private detect(): boolean {
    while (this.start < this.end) {
      const b = this.buf[this.start];
      if (b === 0x20 || b === 0x09 || b === CR || b === LF) {
        this.start++;
        continue;
      }
      if (b === 0x7b /* { */ || b === 0x5b /* [ */) this.mode = "newline";
      else if (b === 0x43 /* C */ || b === 0x63 /* c */) this.mode = "contentLength";
      else throw new FramingError(`cannot detect framing: unexpected first byte 0x${b.toString(16)}`);
      this.scan = this.start;
      return true;
    }
    return false;
  }

  /** One line: a string, null for a blank line (skipped), undefined when no complete line is buffered. */
  private nextLine(): string | null | undefined {
    const nl = this.buf.subarray(0, this.end).indexOf(LF, Math.max(this.scan, this.start));
    if (nl < 0) {
      this.scan = this.end;
      if (this.end - this.start > this.maxMessageSize) {
        throw new FramingError(`message exceeds ${this.maxMessageSize} bytes`);
      }
      return undefined;
    }
    let lineEnd = nl;
    if (lineEnd > this.start && this.buf[lineEnd - 1] === CR) lineEnd--;
    const line = this.buf.subarray(this.start, lineEnd);
    this.start = nl + 1;
    this.scan = this.start;
    if (line.length > this.maxMessageSize) throw new FramingError(`message exceeds ${this.maxMessageSize} bytes`);
    let blank = true;
    for (let i = 0; i < line.length; i++) {
      const b = line[i];
      if (b !== 0x20 && b !== 0x09) {
        blank = false;
        break;
      }
    }
    return blank ? null : utf8Decode(line);
  }

  /** One Content-Length message: a string, or undefined when it is not complete yet. */
  private nextContentLength(): string | null | undefined {
    if (this.bodyLength < 0) {
      // Read header lines until an empty one.
      let pos = this.start;
      let length = -1;
      let headers = 0;
      for (;;) {
        const nl = this.buf.subarray(0, this.end).indexOf(LF, pos);
        if (nl < 0) {
          if (this.end - this.start > this.maxHeaderSize) throw new FramingError("Content-Length header block too large");
          return undefined;
        }
        let lineEnd = nl;
        if (lineEnd > pos && this.buf[lineEnd - 1] === CR) lineEnd--;
        const line = utf8Decode(this.buf.subarray(pos, lineEnd));
        pos = nl + 1;
        if (line.length === 0) {
          if (headers === 0) {
            // A blank line between messages: ignore it.
            this.start = pos;
            continue;
          }
          break;
        }
        headers++;
        const colon = line.indexOf(":");
        if (colon < 0) throw new FramingError(`malformed header line ${JSON.stringify(line)}`);
        if (line.slice(0, colon).trim().toLowerCase() === "content-length") {
          const value = line.slice(colon + 1).trim();
          if (!/^[0-9]+$/.test(value)) throw new FramingError(`invalid Content-Length ${JSON.stringify(value)}`);
          length = Number(value);
        }
      }
      if (length < 0) throw new FramingError("header block without Content-Length");
      if (length > this.maxMessageSize) throw new FramingError(`message of ${length} bytes exceeds ${this.maxMessageSize}`);
      this.start = pos;
      this.bodyLength = length;
    }
    if (this.end - this.start < this.bodyLength) return undefined;
    const body = utf8Decode(this.buf.subarray(this.start, this.start + this.bodyLength));
    this.start += this.bodyLength;
    this.scan = this.start;
    this.bodyLength = -1;
    return body;
  }
}
