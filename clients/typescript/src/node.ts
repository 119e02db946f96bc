/**
 * @tipsd/client/node — Node transports (Unix socket, child process over stdio) and `connect` helpers for them.
 * Re-exports the whole core, so Node code imports only this module.
 */
import * as childProcess from "child_process";
import * as fs from "fs";
import * as net from "net";
import { ClientOptions, connect, TipsClient } from "./client.js";
import { TipsdNativeModule, tipsdNativeModule as coreNativeModule, TipsdNativeModuleOptions } from "./native-module.js";
import type { StorageAdapter } from "./offline.js";
import {
  getTrafficTap,
  setTrafficTap,
  StreamTransport,
  StreamTransportOptions,
  TrafficPeer,
  TrafficTap,
  Transport,
  TransportFactory,
} from "./transport.js";
import { utf8Decode } from "./utf8.js";

export * from "./index.js";

// ─── Offline first: a storage in files ────────────────────────────────────────────────────────────────────

/**
 * A {@link StorageAdapter} keeping each key in a file of `directory` (made if missing, mode 0700): what a Node app
 * or a test passes as `storage`. Reads and writes are synchronous, so the stored tips are there as soon as the
 * client is created; each write goes to a temporary file that is flushed to disk (fsync) and renamed over the old
 * one, so a crash leaves the old value or the new one, never half of either.
 */
export function fileStorage(directory: string): StorageAdapter {
  fs.mkdirSync(directory, { recursive: true, mode: 0o700 });
  const file = (key: string) => `${directory}/${encodeURIComponent(key)}.json`;
  return {
    getItem(key: string): string | null {
      try {
        return fs.readFileSync(file(key), "utf8");
      } catch (e) {
        if ((e as { code?: unknown }).code === "ENOENT") return null;
        throw e;
      }
    },
    setItem(key: string, value: string): void {
      const target = file(key);
      const temporary = `${target}.${process.pid}.tmp`;
      const fd = fs.openSync(temporary, "w", 0o600);
      try {
        fs.writeSync(fd, value);
        fs.fsyncSync(fd);
      } finally {
        fs.closeSync(fd);
      }
      fs.renameSync(temporary, target);
    },
    removeItem(key: string): void {
      try {
        fs.unlinkSync(file(key));
      } catch (e) {
        if ((e as { code?: unknown }).code !== "ENOENT") throw e;
      }
    },
  };
}

// ─── Traffic log ────────────────────────────────────────────────────────────────────────────────────────────

/** The environment variable naming the traffic log file (the same as the Python client's). */
export const TRAFFIC_LOG_ENV = "TIPSD_TRAFFIC_LOG";

let trafficConnections = 0;

/**
 * A {@link TrafficTap} appending every message to `path` (default: the file named by `$TIPSD_TRAFFIC_LOG` when a
 * connection opens; no logging when it is unset), one JSON line per message, as the Python client's tap does:
 * `{"conn", "peer", "dir": "out"|"in", "t", "test", "msg"}` (`conn` is unique across processes; `test` is the
 * script that opened the connection, e.g. the node:test file; a frame that is not JSON is logged as `raw` text).
 * Each line is one append (`O_APPEND`) write, so processes may share the file. Write errors are ignored.
 * `clients/python/tests/traffic_check.py` validates such a log against protocol/openrpc.json.
 */
export function fileTrafficTap(path?: string): TrafficTap {
  return {
    open(peer: TrafficPeer) {
      const file = path ?? process.env[TRAFFIC_LOG_ENV];
      if (!file) return null;
      const conn = `${process.pid}-${++trafficConnections}`;
      const script = process.argv[1];
      return (dir, message) => {
        const entry: { [key: string]: unknown } = { conn, peer, dir, t: Date.now() / 1000 };
        if (script) entry.test = script;
        try {
          entry.msg = JSON.parse(message);
        } catch {
          entry.raw = message;
        }
        try {
          fs.appendFileSync(file, JSON.stringify(entry) + "\n");
        } catch {
          /* never disturbs the connection */
        }
      };
    },
  };
}

// Node transports (and any other BaseTransport in this process) log to $TIPSD_TRAFFIC_LOG when it is set,
// unless a tap was already installed with setTrafficTap (or is given in a transport's options).
if (getTrafficTap() === null) setTrafficTap(fileTrafficTap());

export type UnixSocketTransportOptions = StreamTransportOptions;

/** A transport to `tipsd serve --socket PATH` (framing: `"newline"` by default, or `"contentLength"`). */
export function unixSocketTransport(path: string, options: UnixSocketTransportOptions = {}): TransportFactory {
  return () =>
    new Promise<Transport>((resolve, reject) => {
      const socket = net.createConnection({ path });
      let transport: StreamTransport | undefined;
      let lastError: Error | undefined;
      socket.on("connect", () => {
        transport = new StreamTransport(
          {
            write: (bytes) => {
              socket.write(bytes);
            },
            end: () => {
              socket.end();
              socket.destroy();
            },
          },
          { ...options, peer: options.peer ?? { kind: "socket", path } },
        );
        resolve(transport);
      });
      socket.on("data", (chunk: Uint8Array) => transport?.receive(chunk));
      socket.on("error", (error: Error) => {
        lastError = error;
        if (!transport) reject(error);
      });
      socket.on("close", () => {
        if (transport) transport.streamEnded(lastError);
        else reject(lastError ?? new Error(`connection to ${path} closed`));
      });
    });
}

export interface StdioTransportOptions extends StreamTransportOptions {
  /** The tipsd executable (default `tipsd`, found on PATH). */
  command?: string;
  /** Arguments after `serve --stdio`, e.g. `["--datastore", ":memory:", "--clock", "virtual"]`. */
  args?: string[];
  /** What to do with the daemon's stderr (its logs): `"ignore"` (default), `"inherit"`, or a callback per chunk. */
  stderr?: "ignore" | "inherit" | ((text: string) => void);
  env?: { [key: string]: string | undefined };
  cwd?: string;
  /** After `close()` ends stdin, the child gets SIGTERM if it has not exited within this long (default 2 s). */
  killAfterMs?: number;
}

/** A transport over a child `tipsd serve --stdio`; every (re)connection spawns a fresh child. */
export function stdioTransport(options: StdioTransportOptions = {}): TransportFactory {
  return () =>
    new Promise<Transport>((resolve, reject) => {
      const stderrMode = options.stderr === "inherit" ? "inherit" : typeof options.stderr === "function" ? "pipe" : "ignore";
      const child = childProcess.spawn(options.command ?? "tipsd", ["serve", "--stdio", ...(options.args ?? [])], {
        stdio: ["pipe", "pipe", stderrMode],
        ...(options.env ? { env: options.env } : {}),
        ...(options.cwd ? { cwd: options.cwd } : {}),
      });
      let transport: StreamTransport | undefined;
      let killTimer: unknown;
      let spawnError: Error | undefined;
      const onStderr = options.stderr;
      if (typeof onStderr === "function" && child.stderr) child.stderr.on("data", (chunk: Uint8Array) => onStderr(utf8Decode(chunk)));
      child.stdin?.on("error", () => {
        /* EPIPE after the child died: reported through 'exit' */
      });
      child.on("error", (error: Error) => {
        spawnError = error;
        if (!transport) reject(error);
      });
      child.on("spawn", () => {
        transport = new StreamTransport(
          {
            write: (bytes) => {
              if (!child.stdin || child.stdin.destroyed) throw new Error("tipsd stdin is closed");
              child.stdin.write(bytes);
            },
            end: () => {
              child.stdin?.end();
              if (child.exitCode === null && child.signalCode === null && killTimer === undefined) {
                killTimer = setTimeout(() => {
                  if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
                }, options.killAfterMs ?? 2000);
              }
            },
          },
          { ...options, peer: options.peer ?? { kind: "stdio", command: [options.command ?? "tipsd", "serve", "--stdio", ...(options.args ?? [])] } },
        );
        resolve(transport);
      });
      child.stdout?.on("data", (chunk: Uint8Array) => transport?.receive(chunk));
      // 'close' comes after the process exited and its stdio streams closed, so no reply is lost.
      child.on("close", (code: number | null, signal: string | null) => {
        if (killTimer !== undefined) clearTimeout(killTimer);
        const error = code === 0 ? undefined : spawnError ?? new Error(`tipsd exited with ${signal ? `signal ${signal}` : `status ${code}`}`);
        transport?.streamEnded(error);
      });
    });
}

export type NodeClientOptions<S extends boolean> = Omit<ClientOptions<S>, "transport">;

/** Connects to `tipsd serve --socket PATH`. Not strict: resolves even when the daemon is absent (no-op mode). */
export function connectUnix<S extends boolean = false>(
  path: string,
  options: NodeClientOptions<S> & UnixSocketTransportOptions = {},
): Promise<TipsClient<S>> {
  const { framing, maxMessageSize, trafficTap, peer, ...clientOptions } = options;
  return connect<S>({ ...clientOptions, transport: unixSocketTransport(path, { framing, maxMessageSize, trafficTap, peer }) } as ClientOptions<S>);
}

/** Spawns `tipsd serve --stdio` and connects to it. */
export function connectStdio<S extends boolean = false>(
  options: NodeClientOptions<S> & StdioTransportOptions = {},
): Promise<TipsClient<S>> {
  const { framing, maxMessageSize, trafficTap, peer, command, args, stderr, env, cwd, killAfterMs, ...clientOptions } = options;
  return connect<S>({
    ...clientOptions,
    transport: stdioTransport({ framing, maxMessageSize, trafficTap, peer, command, args, stderr, env, cwd, killAfterMs }),
  } as ClientOptions<S>);
}

/** {@link tipsdNativeModule}'s options in Node: also `tipsd serve --socket PATH`. */
export type NodeNativeModuleOptions =
  | TipsdNativeModuleOptions
  | (Omit<ClientOptions<false>, "transport" | "strict"> &
      UnixSocketTransportOptions & {
        /** `tipsd serve --socket PATH`. */
        socketPath: string;
        hideWhileDisconnected?: boolean;
      });

/**
 * Seed 000's `RorkTipKit` module surface backed by tipsd (see the core's `tipsdNativeModule`), here also over the
 * daemon's Unix socket: `tipsdNativeModule({ socketPath })`.
 */
export function tipsdNativeModule(options: NodeNativeModuleOptions): TipsdNativeModule {
  if (!("socketPath" in options)) return coreNativeModule(options);
  const { socketPath, framing, maxMessageSize, trafficTap, peer, ...rest } = options;
  return coreNativeModule({ ...rest, transport: unixSocketTransport(socketPath, { framing, maxMessageSize, trafficTap, peer }) });
}
