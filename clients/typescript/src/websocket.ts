/**
 * WebSocket transports: one JSON-RPC message (or batch) per text frame, over anything shaped like the WHATWG /
 * React Native `WebSocket`. {@link connectWebSocket} connects to `tipsd serve --listen HOST:PORT` with a token:
 *
 * - tipsd's own token (`tipsd token`, 64 characters) is offered as the subprotocols `tipsd.v1` and
 *   `tipsd.token.<token>` — the one way to authenticate that browsers allow — plus `Authorization: Bearer <token>`
 *   on React Native;
 * - a longer token — a hosted node's JWT (`tipsd serve --hosted`) — does not fit a subprotocol (libwebsockets
 *   refuses a `Sec-WebSocket-Protocol` header over 127 bytes), so it goes as `Authorization: Bearer <token>` where
 *   the platform's WebSocket takes headers (Node), and elsewhere (browsers, React Native) as the `access_token`
 *   query parameter.
 *
 * No Node API is used: this module runs in browsers, React Native and Node ≥ 22 (Node 20 with
 * `--experimental-websocket`). The token never appears in an error or a log line.
 */
import { ClientOptions, connect, TipsClient } from "./client.js";
import { DAEMON_TOKEN_LENGTH, resolveToken, TokenSource } from "./auth.js";
import { BaseTransport, TrafficPeer, TrafficTap, Transport, TransportFactory } from "./transport.js";
import { utf8Decode } from "./utf8.js";

/**
 * Anything shaped like the WHATWG / React Native `WebSocket`: `send`, `close`, and the `on…` handler
 * properties. `readyState` follows the standard numbering (0 connecting, 1 open, 2 closing, 3 closed).
 */
export interface WebSocketLike {
  readonly readyState?: number;
  send(data: string): void;
  close(code?: number, reason?: string): void;
  onopen?: ((event: unknown) => void) | null;
  onmessage: ((event: { data: unknown }) => void) | null;
  onclose: ((event: unknown) => void) | null;
  onerror?: ((event: unknown) => void) | null;
}

/**
 * A `WebSocket` constructor. The WHATWG one takes `(url, protocols)`; React Native's and the `ws` package's
 * also take a third argument, `{headers}`, which browsers ignore.
 */
export type WebSocketConstructor = new (
  url: string,
  protocols?: string | string[],
  options?: { headers?: { [name: string]: string } },
) => WebSocketLike;

/** The subprotocol tipsd's WebSocket listener selects. */
export const TIPSD_SUBPROTOCOL = "tipsd.v1";
/** The prefix of the subprotocol carrying the token: `tipsd.token.<token>`. */
export const TIPSD_TOKEN_SUBPROTOCOL_PREFIX = "tipsd.token.";

/** The subprotocols offered to tipsd: `["tipsd.v1", "tipsd.token.<token>"]`. */
export function tipsdSubprotocols(token: string): string[] {
  return [TIPSD_SUBPROTOCOL, TIPSD_TOKEN_SUBPROTOCOL_PREFIX + token];
}

const CONNECTING = 0;
const OPEN = 1;

const CLOSE_CODES: { [code: number]: string } = {
  1001: "going away: tipsd is shutting down",
  1002: "protocol error",
  1003: "unsupported data (a binary frame)",
  1006: "abnormal closure",
  1007: "invalid UTF-8",
  1008: "policy violation",
  1009: "message too big",
  1011: "server error",
};

function frameText(data: unknown): string | undefined {
  if (typeof data === "string") return data;
  if (data instanceof ArrayBuffer) return utf8Decode(new Uint8Array(data));
  if (ArrayBuffer.isView(data)) return utf8Decode(new Uint8Array(data.buffer, data.byteOffset, data.byteLength));
  return undefined;
}

/** Replaces every secret in `text` with `<redacted>`. */
function redact(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const secret of secrets) if (secret) out = out.split(secret).join("<redacted>");
  return out;
}

function errorText(event: unknown): string | undefined {
  if (event && typeof event === "object") {
    const e = event as { message?: unknown; error?: unknown };
    if (typeof e.message === "string" && e.message) return e.message;
    if (e.error instanceof Error && e.error.message) return e.error.message;
  }
  return undefined;
}

function closeCode(event: unknown): number | undefined {
  const code = event && typeof event === "object" ? (event as { code?: unknown }).code : undefined;
  return typeof code === "number" ? code : undefined;
}

function closeText(event: unknown): string | undefined {
  const code = closeCode(event);
  if (code === undefined) return undefined;
  const reason = (event as { reason?: unknown }).reason;
  const meaning = CLOSE_CODES[code];
  return `code ${code}${meaning ? ` (${meaning})` : ""}${typeof reason === "string" && reason ? `: ${reason}` : ""}`;
}

/** A message for an error (`error`) or close (`close`) event or a thrown error, without the secrets. */
function describe(kind: "error" | "close", event: unknown, secrets: readonly string[]): string {
  const text = (kind === "close" ? closeText(event) : undefined) ?? errorText(event) ?? "WebSocket error";
  return redact(text, secrets).replace(/[.\s]+$/, "");
}

export interface WebSocketTransportAdapterOptions {
  /** Records this transport's messages (default: the tap set with `setTrafficTap`; `null`: none). */
  trafficTap?: TrafficTap | null;
  /** What it is connected to, for the tap (default `{ kind: "websocket", url }` when the socket has a `url`). */
  peer?: TrafficPeer;
  /** Strings never to put in an error message (replaced by `<redacted>`), e.g. a token. */
  secrets?: readonly string[];
}

/** Adapts an already-open WebSocket-shaped object: one message per frame, no framing. */
export class WebSocketTransport extends BaseTransport {
  constructor(private readonly socket: WebSocketLike, options: WebSocketTransportAdapterOptions = {}) {
    super();
    const url = (socket as { url?: unknown }).url;
    const secrets = options.secrets ?? [];
    this.openTrafficTap(options.peer ?? (typeof url === "string" ? { kind: "websocket", url: redact(url, secrets) } : { kind: "websocket" }), options.trafficTap);
    socket.onmessage = (event) => {
      const text = frameText(event.data);
      if (text === undefined) return;
      // One message (or batch array) per frame; a bridge that forwards newline-delimited text may pack several.
      if (text.indexOf("\n") < 0) this.deliver(text);
      else for (const line of text.split("\n")) if (line.trim()) this.deliver(line);
    };
    // An error fails the connection: browsers follow it with a close event, some implementations never do, so
    // the transport ends on the error (a later close event changes nothing).
    socket.onerror = (event) => {
      if (this.closed) return;
      this.ended(new Error(describe("error", event, secrets)));
      try {
        socket.close();
      } catch {
        /* ignore */
      }
    };
    socket.onclose = (event) => {
      const code = closeCode(event);
      this.ended(code === undefined || code === 1000 ? undefined : new Error(describe("close", event, secrets)));
    };
  }

  send(message: string): void {
    if (this.closed) throw new Error("transport is closed");
    this.recordOutgoing(message);
    this.socket.send(message);
  }

  close(): void {
    if (this.closed) return;
    try {
      this.socket.close(1000, "client closed");
    } finally {
      // A WebSocket-shaped object may never fire onclose after close(); do not wait for it.
      this.ended();
    }
  }
}

export interface WebSocketTransportOptions {
  /** Give up opening after this long (default 10 s). */
  openTimeoutMs?: number;
  /** Records the messages (default: the tap set with `setTrafficTap`; `null`: none). */
  trafficTap?: TrafficTap | null;
  /**
   * The token to present at the upgrade (surrounding whitespace is ignored), or a {@link TokenProvider} asked before
   * each connection attempt: tipsd's own (`tipsd token`, 64 characters), offered as the subprotocols `tipsd.v1` and
   * `tipsd.token.<token>` (then `protocols`); or a longer one — a hosted node's JWT — sent as
   * `Authorization: Bearer <token>` or as the `access_token` query parameter (see `authorizationHeader`). Without
   * it, only `protocols` are offered (a hosted node then expects the token in `initialize`, or a bridge of your own
   * needs none). An empty or malformed token, or a provider that throws or rejects, fails that attempt without a
   * socket (the client retries with backoff, calling the provider again).
   */
  token?: TokenSource;
  /** Subprotocols to offer (after tipsd's when there is a token). */
  protocols?: string[];
  /** Headers, for WebSocket constructors that take them (Node's, React Native's, `ws`). */
  headers?: { [name: string]: string };
  /**
   * Send the token as `Authorization: Bearer <token>`. By default: on Node (whose WebSocket takes headers) for a
   * token longer than tipsd's own, and on React Native for tipsd's own (beside the subprotocol). A longer token that
   * is not sent as a header goes in the URL's `access_token` query parameter — what browsers can send, and React
   * Native by default; `true` sends the header instead wherever the constructor takes one.
   */
  authorizationHeader?: boolean;
  /** The WebSocket constructor (default: the global `WebSocket`, looked up at each connection attempt). */
  WebSocket?: WebSocketConstructor;
}

// tchar (RFC 7230): what a subprotocol may contain. A token outside it would make the WebSocket constructor
// throw, with the token in its message.
const SUBPROTOCOL_TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
// b64token (RFC 6750): what a bearer token may be — JWTs (base64url and dots) among them.
const BEARER_TOKEN = /^[A-Za-z0-9\-._~+/]+=*$/;

function isReactNative(): boolean {
  const nav = (globalThis as unknown as { navigator?: { product?: unknown } }).navigator;
  return !!nav && nav.product === "ReactNative";
}

function isNode(): boolean {
  const proc = (globalThis as unknown as { process?: { versions?: { node?: unknown } } }).process;
  return !isReactNative() && !!proc && !!proc.versions && typeof proc.versions.node === "string";
}

function globalWebSocket(): WebSocketConstructor | undefined {
  const Ctor = (globalThis as unknown as { WebSocket?: unknown }).WebSocket;
  return typeof Ctor === "function" ? (Ctor as WebSocketConstructor) : undefined;
}

/**
 * Node's own WebSocket (undici's), as found when this module loaded: it takes headers in its second argument
 * (`{protocols, headers}`) and ignores a third, unlike React Native's and the `ws` package's `(url, protocols,
 * {headers})`.
 */
const NODE_WEBSOCKET = isNode() ? globalWebSocket() : undefined;

const NO_WEBSOCKET =
  "this runtime has no global WebSocket (Node: version 22 or later, or node --experimental-websocket on Node 20; elsewhere pass options.WebSocket)";

/** How a token is presented at the upgrade. */
interface Presentation {
  subprotocol: boolean;
  header: boolean;
  query: boolean;
}

function presentation(token: string, options: WebSocketTransportOptions): Presentation {
  const subprotocol = token.length <= DAEMON_TOKEN_LENGTH && SUBPROTOCOL_TOKEN.test(token);
  const header = options.authorizationHeader ?? (subprotocol ? isReactNative() : isNode());
  return { subprotocol, header, query: !subprotocol && !header };
}

/** `url` with `access_token=<token>` added to its query (RFC 6750 §2.3). */
function withAccessToken(url: string, token: string): string {
  const hash = url.indexOf("#");
  const base = hash < 0 ? url : url.slice(0, hash);
  const fragment = hash < 0 ? "" : url.slice(hash);
  const separator = base.indexOf("?") < 0 ? "?" : /[?&]$/.test(base) ? "" : "&";
  return `${base}${separator}access_token=${encodeURIComponent(token)}${fragment}`;
}

function openSocket(url: string, options: WebSocketTransportOptions, token: string | undefined): WebSocketLike {
  const Ctor = options.WebSocket ?? globalWebSocket();
  if (!Ctor) throw new Error(NO_WEBSOCKET);
  const how = token === undefined ? undefined : presentation(token, options);
  const ours = how === undefined ? [] : how.subprotocol ? tipsdSubprotocols(token as string) : [TIPSD_SUBPROTOCOL];
  const protocols = [...ours, ...(options.protocols ?? [])];
  let headers = options.headers ? { ...options.headers } : undefined;
  if (how && how.header) headers = { ...headers, Authorization: `Bearer ${token}` };
  const target = how && how.query ? withAccessToken(url, token as string) : url;
  let socket: WebSocketLike;
  if (headers && Ctor === NODE_WEBSOCKET) {
    socket = new (Ctor as unknown as new (url: string, init: { protocols: string[]; headers: { [name: string]: string } }) => WebSocketLike)(target, { protocols, headers });
  } else {
    socket = headers ? new Ctor(target, protocols, { headers }) : protocols.length > 0 ? new Ctor(target, protocols) : new Ctor(target);
  }
  // tipsd sends text frames only; should a binary one arrive, an ArrayBuffer is decodable where a Blob is not.
  try {
    if ("binaryType" in socket) (socket as { binaryType?: string }).binaryType = "arraybuffer";
  } catch {
    /* read-only in some implementations */
  }
  return socket;
}

/**
 * A transport factory over WebSocket-shaped objects, called again on each reconnection. Pass a URL (a new
 * `WebSocket` per attempt; with `options.token`, authenticated for `tipsd serve --listen`) or a function creating
 * the socket (a fresh one on every call). A failure to open — no `WebSocket` in the runtime, a refused
 * connection, a wrong token (HTTP 401), a token provider that fails — rejects, which the client treats as an
 * absent daemon. The factory's `token` is `options.token`: a client refreshes a hosted session with it.
 */
export function webSocketTransport(target: string | (() => WebSocketLike), options: WebSocketTransportOptions = {}): TransportFactory {
  const source = typeof target === "string" ? options.token : undefined;
  const fixed = typeof options.token === "string" ? [options.token, encodeURIComponent(options.token)] : [];
  let attempts = 0;
  const factory = async () => {
    const reason = attempts++ === 0 ? "connect" : "reconnect";
    const token = source !== undefined ? await resolveToken(source, reason) : undefined;
    const secrets = [...fixed, ...(token ? [token, encodeURIComponent(token)] : [])];
    const hint =
      token !== undefined
        ? `; check that tipsd serves --listen at ${redact(String(target), secrets)} and that the token is the one \`tipsd token\` prints (hosted mode: a valid JWT)`
        : "";
    if (token !== undefined && !SUBPROTOCOL_TOKEN.test(token) && !BEARER_TOKEN.test(token)) {
      throw new Error("the tipsd token is malformed (expected what `tipsd token` prints, or a JWT)");
    }
    const create = typeof target === "string" ? () => openSocket(target, options, token) : target;
    const peer: TrafficPeer | undefined = typeof target === "string" ? { kind: "websocket", url: redact(target, secrets) } : undefined;
    return new Promise<Transport>((resolve, reject) => {
      let socket: WebSocketLike;
      try {
        socket = create();
      } catch (e) {
        reject(new Error(describe("error", e instanceof Error ? e : { message: String(e) }, secrets)));
        return;
      }
      const adopt = () => resolve(new WebSocketTransport(socket, { trafficTap: options.trafficTap, peer, secrets }));
      if (socket.readyState === undefined || socket.readyState === OPEN) {
        adopt();
        return;
      }
      if (socket.readyState !== CONNECTING) {
        reject(new Error("WebSocket is already closed"));
        return;
      }
      let settled = false;
      const timer = setTimeout(() => {
        if (settled) return;
        settled = true;
        try {
          socket.close();
        } catch {
          /* ignore */
        }
        reject(new Error(`WebSocket open timed out${hint}`));
      }, options.openTimeoutMs ?? 10_000);
      // An error before opening is a failed handshake (refused, HTTP 401, bad subprotocol…). Browsers follow it
      // with a close event, some implementations (Node 20's) never do: the attempt fails on the error.
      socket.onerror = (event) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        try {
          socket.close();
        } catch {
          /* ignore */
        }
        reject(new Error(`WebSocket failed to open: ${describe("error", event, secrets)}${hint}`));
      };
      socket.onclose = (event) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        reject(new Error(`WebSocket closed before opening: ${describe("close", event, secrets)}${hint}`));
      };
      socket.onopen = () => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        socket.onopen = null;
        adopt();
      };
    });
  };
  return source === undefined ? factory : Object.assign(factory, { token: source });
}

/** {@link connectWebSocket}'s options: the client's (but `transport`) and the WebSocket's, with a required token. */
export type WebSocketClientOptions<S extends boolean> = Omit<ClientOptions<S>, "transport" | "token"> &
  Omit<WebSocketTransportOptions, "token"> & {
    /**
     * tipsd's token (`tipsd token` prints it), a hosted node's JWT or admin token, or a provider asked before each
     * connection attempt (and, in hosted mode, before each refresh).
     */
    token: TokenSource;
    /**
     * Where the token is presented: `"upgrade"` (default) — at the WebSocket upgrade, as `WebSocketTransportOptions`
     * describes, the only way `tipsd serve --listen` without `--hosted` accepts; `"initialize"` — in `initialize`'s
     * `auth` (hosted mode only), which keeps a JWT out of the URL where the platform cannot send headers.
     */
    signIn?: "upgrade" | "initialize";
  };

/**
 * Connects to `tipsd serve --listen HOST:PORT` (e.g. `ws://127.0.0.1:8787/`) with its token — a string, or a
 * (possibly async) function called before each (re)connection attempt — and waits for the first attempt. Like
 * `connectUnix`, it never rejects unless `strict`: without a daemon, a `WebSocket` or a valid token, the client
 * is in no-op mode (one warning) and keeps reconnecting with backoff. With `storage` (offline first: see
 * `ClientOptions.storage`), it resolves as soon as the stored tips and changes are loaded, without waiting for the
 * network, and changes made meanwhile are queued. A hosted session (`tipsd serve --hosted`) is
 * refreshed before its token expires when `token` is a provider (see `ClientOptions.autoRefresh`). For a
 * module-level singleton, `createClient({ transport: webSocketTransport(url, { token }) })` returns at once.
 */
export function connectWebSocket<S extends boolean = false>(
  url: string,
  options: WebSocketClientOptions<S> = {} as WebSocketClientOptions<S>,
): Promise<TipsClient<S>> {
  const { token, signIn, openTimeoutMs, trafficTap, protocols, headers, authorizationHeader, WebSocket, ...clientOptions } = options;
  const socket = { openTimeoutMs, trafficTap, headers, authorizationHeader, WebSocket };
  if (signIn === "initialize") {
    return connect<S>({
      ...clientOptions,
      token,
      transport: webSocketTransport(url, { ...socket, protocols: [TIPSD_SUBPROTOCOL, ...(protocols ?? [])] }),
    } as ClientOptions<S>);
  }
  return connect<S>({ ...clientOptions, transport: webSocketTransport(url, { ...socket, token: token ?? "", protocols }) } as ClientOptions<S>);
}
