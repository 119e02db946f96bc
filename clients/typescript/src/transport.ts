/**
 * Transports: how JSON-RPC messages reach the daemon.
 *
 * A {@link Transport} carries whole messages (JSON texts). Byte-stream media (a Unix socket, a child's stdio,
 * a React Native TCP socket library) frame them with {@link StreamTransport}; message media (a WebSocket) send
 * one message per frame with {@link webSocketTransport}. Node-specific transports live in `./node` so this
 * module, and everything the core imports, runs in React Native.
 */
import { encodeFrame, FrameDecoder, Framing } from "./framing";
import { utf8Decode } from "./utf8";

/** One connection to the daemon, message by message. */
export interface Transport {
  /** Sends one complete JSON-RPC message (a JSON text). The transport adds framing if its medium needs it. */
  send(message: string): void;
  /** Set by the client: receives every complete incoming message as JSON text. */
  onMessage: ((message: string) => void) | null;
  /** Set by the client: called once when the connection is gone (with the cause when abnormal). */
  onClose: ((error?: Error) => void) | null;
  /** Closes the connection; `onClose` follows. Idempotent. */
  close(): void;
}

/** Opens a new connection; the client calls it for the first connection and for every reconnection. */
export type TransportFactory = () => Transport | Promise<Transport>;

// ─── Traffic tap ────────────────────────────────────────────────────────────────────────────────────────────

/** What a connection talks to, for a {@link TrafficTap}: e.g. `{ kind: "socket", path, framing }`. */
export interface TrafficPeer {
  kind: string;
  [key: string]: unknown;
}

/** Receives one connection's messages: `"out"` = sent by the client, `"in"` = received (JSON text as on the wire). */
export type TrafficRecorder = (direction: "out" | "in", message: string) => void;

/**
 * Observes every message the transports built on {@link BaseTransport} send and receive (a debugging aid; the
 * test suites validate the daemon's replies with it). `open` is called once per connection, when it opens, and
 * returns that connection's recorder, or nothing to leave the connection unobserved. A tap that throws never
 * disturbs the connection. The core does no I/O: `@tipsd/client/node` installs a tap writing the file named by
 * `TIPSD_TRAFFIC_LOG`; a React Native app may install its own.
 */
export interface TrafficTap {
  open(peer: TrafficPeer): TrafficRecorder | null | undefined | void;
}

let defaultTrafficTap: TrafficTap | null = null;

/**
 * Sets the tap used by transports that are not given one in their options (`trafficTap`); `null` removes it.
 * Applies to connections opened afterwards.
 */
export function setTrafficTap(tap: TrafficTap | null): void {
  defaultTrafficTap = tap;
}

/** The tap set with {@link setTrafficTap}, if any. */
export function getTrafficTap(): TrafficTap | null {
  return defaultTrafficTap;
}

/**
 * A transport base that queues events which arrive before the client has installed its handlers, and that
 * reports the close exactly once.
 */
export abstract class BaseTransport implements Transport {
  private messageHandler: ((message: string) => void) | null = null;
  private closeHandler: ((error?: Error) => void) | null = null;
  private queued: string[] = [];
  private closedWith: { error?: Error } | undefined;
  private closeReported = false;
  private recorder: TrafficRecorder | null = null;

  abstract send(message: string): void;
  abstract close(): void;

  get onMessage(): ((message: string) => void) | null {
    return this.messageHandler;
  }
  set onMessage(handler: ((message: string) => void) | null) {
    this.messageHandler = handler;
    if (handler) {
      while (this.queued.length > 0 && this.messageHandler === handler) handler(this.queued.shift() as string);
    }
  }

  get onClose(): ((error?: Error) => void) | null {
    return this.closeHandler;
  }
  set onClose(handler: ((error?: Error) => void) | null) {
    this.closeHandler = handler;
    if (handler && this.closedWith) this.reportClose();
  }

  /** True once the connection is gone. */
  get closed(): boolean {
    return this.closedWith !== undefined;
  }

  /**
   * Starts recording this connection with `tap` (`undefined`: the one set with {@link setTrafficTap}; `null`:
   * none). Implementations call it once, when the connection is open.
   */
  protected openTrafficTap(peer: TrafficPeer, tap?: TrafficTap | null): void {
    const chosen = tap === undefined ? defaultTrafficTap : tap;
    if (!chosen) return;
    try {
      this.recorder = chosen.open(peer) || null;
    } catch {
      this.recorder = null;
    }
  }

  /** Implementations call this with each message they are about to send. */
  protected recordOutgoing(message: string): void {
    this.record("out", message);
  }

  private record(direction: "out" | "in", message: string): void {
    if (!this.recorder) return;
    try {
      this.recorder(direction, message);
    } catch {
      /* a tap never disturbs the connection */
    }
  }

  /** Implementations call this for each complete incoming message. */
  protected deliver(message: string): void {
    if (this.closedWith) return;
    this.record("in", message);
    if (this.messageHandler) this.messageHandler(message);
    else this.queued.push(message);
  }

  /** Implementations call this when the connection ends (any number of times; reported once). */
  protected ended(error?: Error): void {
    if (!this.closedWith) this.closedWith = { error };
    if (this.closeHandler) this.reportClose();
  }

  private reportClose(): void {
    if (this.closeReported || !this.closeHandler || !this.closedWith) return;
    this.closeReported = true;
    // Messages that arrived before the close are still delivered first.
    if (this.messageHandler) {
      while (this.queued.length > 0) this.messageHandler(this.queued.shift() as string);
    }
    this.closeHandler(this.closedWith.error);
  }
}

/** The byte-level side of a stream: what {@link StreamTransport} needs to write and to close. */
export interface ByteSink {
  write(bytes: Uint8Array): void;
  /** Closes the stream. The owner must then call {@link StreamTransport.ended}. */
  end(): void;
}

export interface StreamTransportOptions {
  /** Framing used for outgoing messages (default `"newline"`). Incoming framing is detected automatically. */
  framing?: Framing;
  /** Largest accepted incoming message (default 16 MiB). */
  maxMessageSize?: number;
  /** Records this transport's messages (default: the tap set with {@link setTrafficTap}; `null`: none). */
  trafficTap?: TrafficTap | null;
  /** What the stream is connected to, for the traffic tap (default `{ kind: "stream" }`; `framing` is added). */
  peer?: TrafficPeer;
}

/**
 * A transport over any byte stream: frames outgoing messages and decodes incoming bytes. The owner wires the
 * stream's data to {@link receive} and its end to {@link streamEnded}. Use it to adapt a React Native TCP socket
 * library the same way `./node` adapts `net.Socket`.
 */
export class StreamTransport extends BaseTransport {
  readonly framing: Framing;
  private readonly decoder: FrameDecoder;

  constructor(private readonly sink: ByteSink, options: StreamTransportOptions = {}) {
    super();
    this.framing = options.framing ?? "newline";
    this.decoder = new FrameDecoder({ framing: "auto", maxMessageSize: options.maxMessageSize });
    this.openTrafficTap({ ...(options.peer ?? { kind: "stream" }), framing: this.framing }, options.trafficTap);
  }

  send(message: string): void {
    if (this.closed) throw new Error("transport is closed");
    this.recordOutgoing(message);
    this.sink.write(encodeFrame(message, this.framing));
  }

  /** Feed bytes read from the stream. */
  receive(chunk: Uint8Array): void {
    if (this.closed) return;
    let messages: string[];
    try {
      messages = this.decoder.push(chunk);
    } catch (error) {
      this.ended(error instanceof Error ? error : new Error(String(error)));
      this.sink.end();
      return;
    }
    for (const message of messages) this.deliver(message);
  }

  /** Report that the stream has ended. */
  streamEnded(error?: Error): void {
    this.ended(error);
  }

  close(): void {
    if (!this.closed) this.sink.end();
  }
}

// ─── WebSocket-shaped transports ────────────────────────────────────────────────────────────────────────────

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

const CONNECTING = 0;
const OPEN = 1;

function frameText(data: unknown): string | undefined {
  if (typeof data === "string") return data;
  if (data instanceof ArrayBuffer) return utf8Decode(new Uint8Array(data));
  if (ArrayBuffer.isView(data)) return utf8Decode(new Uint8Array(data.buffer, data.byteOffset, data.byteLength));
  return undefined;
}

function describe(event: unknown): string {
  if (event && typeof event === "object") {
    const e = event as { message?: unknown; reason?: unknown; code?: unknown };
    if (typeof e.message === "string" && e.message) return e.message;
    if (typeof e.reason === "string" && e.reason) return e.reason;
    if (typeof e.code === "number") return `code ${e.code}`;
  }
  return "WebSocket error";
}

/** Adapts an already-created WebSocket-shaped object: one message per frame, no framing. */
export class WebSocketTransport extends BaseTransport {
  /**
   * `options.trafficTap`: records this transport's messages (default: the tap set with {@link setTrafficTap});
   * `options.peer`: what it is connected to, for the tap (default `{ kind: "websocket", url }` when the socket
   * has a `url`).
   */
  constructor(private readonly socket: WebSocketLike, options: { trafficTap?: TrafficTap | null; peer?: TrafficPeer } = {}) {
    super();
    const url = (socket as { url?: unknown }).url;
    this.openTrafficTap(options.peer ?? (typeof url === "string" ? { kind: "websocket", url } : { kind: "websocket" }), options.trafficTap);
    let error: Error | undefined;
    socket.onmessage = (event) => {
      const text = frameText(event.data);
      if (text === undefined) return;
      // One message per frame; a bridge that forwards newline-delimited text may pack several.
      if (text.indexOf("\n") < 0) this.deliver(text);
      else for (const line of text.split("\n")) if (line.trim()) this.deliver(line);
    };
    socket.onerror = (event) => {
      error = new Error(describe(event));
    };
    socket.onclose = (event) => {
      const code = event && typeof event === "object" ? (event as { code?: unknown }).code : undefined;
      this.ended(error ?? (typeof code === "number" && code !== 1000 ? new Error(describe(event)) : undefined));
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
  /** Records the messages (default: the tap set with {@link setTrafficTap}; `null`: none). */
  trafficTap?: TrafficTap | null;
}

/**
 * A transport factory over WebSocket-shaped objects. Pass a URL (uses the host's global `WebSocket`, as React
 * Native provides) or a function creating the socket (a fresh one on every call: it is called again on each
 * reconnection).
 */
export function webSocketTransport(
  target: string | (() => WebSocketLike),
  options: WebSocketTransportOptions = {},
): TransportFactory {
  const create =
    typeof target === "string"
      ? () => {
          const Ctor = (globalThis as unknown as { WebSocket?: new (url: string) => WebSocketLike }).WebSocket;
          if (typeof Ctor !== "function") throw new Error("no global WebSocket in this runtime; pass a factory");
          return new Ctor(target);
        }
      : target;
  const peer: TrafficPeer | undefined = typeof target === "string" ? { kind: "websocket", url: target } : undefined;
  return () =>
    new Promise<Transport>((resolve, reject) => {
      const socket = create();
      if (socket.readyState === undefined || socket.readyState === OPEN) {
        resolve(new WebSocketTransport(socket, { trafficTap: options.trafficTap, peer }));
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
        reject(new Error("WebSocket open timed out"));
      }, options.openTimeoutMs ?? 10_000);
      let lastError: unknown;
      socket.onerror = (event) => {
        lastError = event;
      };
      socket.onclose = (event) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        reject(new Error(`WebSocket closed before opening: ${describe(lastError ?? event)}`));
      };
      socket.onopen = () => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        socket.onopen = null;
        resolve(new WebSocketTransport(socket, { trafficTap: options.trafficTap, peer }));
      };
    });
}
