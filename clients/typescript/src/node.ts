/**
 * @tipsd/client/node — Node transports (Unix socket, child process over stdio) and `connect` helpers for them.
 * Re-exports the whole core, so Node code imports only this module.
 */
import * as childProcess from "child_process";
import * as net from "net";
import { ClientOptions, connect, TipsClient } from "./client";
import { StreamTransport, StreamTransportOptions, Transport, TransportFactory } from "./transport";
import { utf8Decode } from "./utf8";

export * from "./index";

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
          options,
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
          options,
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
  const { framing, maxMessageSize, ...clientOptions } = options;
  return connect<S>({ ...clientOptions, transport: unixSocketTransport(path, { framing, maxMessageSize }) } as ClientOptions<S>);
}

/** Spawns `tipsd serve --stdio` and connects to it. */
export function connectStdio<S extends boolean = false>(
  options: NodeClientOptions<S> & StdioTransportOptions = {},
): Promise<TipsClient<S>> {
  const { framing, maxMessageSize, command, args, stderr, env, cwd, killAfterMs, ...clientOptions } = options;
  return connect<S>({
    ...clientOptions,
    transport: stdioTransport({ framing, maxMessageSize, command, args, stderr, env, cwd, killAfterMs }),
  } as ClientOptions<S>);
}
