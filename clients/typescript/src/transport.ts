/**
 * Transports: how JSON-RPC messages reach the daemon.
 *
 * A {@link Transport} carries whole messages (JSON texts). Byte-stream media (a Unix socket, a child's stdio,
 * a React Native TCP socket library) frame them with {@link StreamTransport}; message media (a WebSocket) send
 * one message per frame (`./websocket`). Node-specific transports live in `./node` so this module, and
 * everything the core imports, runs in React Native and browsers.
 */
import type { TokenSource } from "./auth.js";
import { encodeFrame, FrameDecoder, Framing } from "./framing.js";

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

/**
 * Opens a new connection; the client calls it for the first connection and for every reconnection. A factory that
 * presents a token itself (`webSocketTransport(url, {token})`) carries it as `token`, so that the client can
 * refresh a hosted session with the same source.
 */
export type TransportFactory = (() => Transport | Promise<Transport>) & { readonly token?: TokenSource };

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
