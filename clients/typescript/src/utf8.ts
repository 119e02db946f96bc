/**
 * UTF-8 without depending on a host API: `TextEncoder`/`TextDecoder` when the host has them (Node, modern
 * Hermes, browsers), a small pure-JS codec otherwise (older React Native runtimes).
 */

interface HostEncoder {
  encode(s: string): Uint8Array;
}
interface HostDecoder {
  decode(b: Uint8Array): string;
}

const host = globalThis as unknown as {
  TextEncoder?: new () => HostEncoder;
  TextDecoder?: new (label?: string, options?: { fatal?: boolean }) => HostDecoder;
};

const hostEncoder: HostEncoder | undefined = typeof host.TextEncoder === "function" ? new host.TextEncoder() : undefined;
let hostDecoder: HostDecoder | undefined;
try {
  hostDecoder = typeof host.TextDecoder === "function" ? new host.TextDecoder("utf-8") : undefined;
} catch {
  hostDecoder = undefined;
}

/** Encodes a string as UTF-8 (lone surrogates become U+FFFD, as `TextEncoder` does). */
export function utf8Encode(s: string): Uint8Array {
  if (hostEncoder) return hostEncoder.encode(s);
  return jsEncode(s);
}

/** Decodes UTF-8 bytes (invalid sequences become U+FFFD). */
export function utf8Decode(bytes: Uint8Array): string {
  if (hostDecoder) return hostDecoder.decode(bytes);
  return jsDecode(bytes);
}

/** Exported for tests: the pure-JS encoder. */
export function jsEncode(s: string): Uint8Array {
  const out: number[] = [];
  for (let i = 0; i < s.length; i++) {
    let c = s.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length) {
      const d = s.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) {
        c = 0x10000 + ((c - 0xd800) << 10) + (d - 0xdc00);
        i++;
      } else {
        c = 0xfffd;
      }
    } else if (c >= 0xd800 && c <= 0xdfff) {
      c = 0xfffd;
    }
    if (c < 0x80) out.push(c);
    else if (c < 0x800) out.push(0xc0 | (c >> 6), 0x80 | (c & 63));
    else if (c < 0x10000) out.push(0xe0 | (c >> 12), 0x80 | ((c >> 6) & 63), 0x80 | (c & 63));
    else out.push(0xf0 | (c >> 18), 0x80 | ((c >> 12) & 63), 0x80 | ((c >> 6) & 63), 0x80 | (c & 63));
  }
  return Uint8Array.from(out);
}

/** Exported for tests: the pure-JS decoder. */
export function jsDecode(b: Uint8Array): string {
  let s = "";
  const units: number[] = [];
  const flush = () => {
    s += String.fromCharCode.apply(null, units);
    units.length = 0;
  };
  let i = 0;
  while (i < b.length) {
    const x = b[i];
    let cp = 0xfffd;
    let need = 0;
    let min = 0;
    if (x < 0x80) {
      cp = x;
    } else if (x >= 0xc2 && x <= 0xdf) {
      cp = x & 31;
      need = 1;
      min = 0x80;
    } else if (x >= 0xe0 && x <= 0xef) {
      cp = x & 15;
      need = 2;
      min = 0x800;
    } else if (x >= 0xf0 && x <= 0xf4) {
      cp = x & 7;
      need = 3;
      min = 0x10000;
    }
    i++;
    if (need > 0) {
      let ok = true;
      for (let k = 0; k < need; k++) {
        const y = b[i];
        if (i >= b.length || (y & 0xc0) !== 0x80) {
          ok = false;
          break;
        }
        cp = (cp << 6) | (y & 63);
        i++;
      }
      if (!ok || cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) cp = 0xfffd;
    } else if (x >= 0x80) {
      cp = 0xfffd;
    }
    if (cp >= 0x10000) {
      cp -= 0x10000;
      units.push(0xd800 + (cp >> 10), 0xdc00 + (cp & 0x3ff));
    } else {
      units.push(cp);
    }
    if (units.length > 4096) flush();
  }
  flush();
  return s;
}
