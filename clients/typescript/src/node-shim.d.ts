// The few Node APIs `node.ts` uses, declared by hand because no @types/node is available here. Only `node.ts`
// imports these modules; the core never does, so React Native bundles never see them. This file is not
// emitted, and `node.ts` keeps these types out of its public signatures, so the shipped .d.ts files do not
// depend on it (nor conflict with @types/node in a consumer's project).

interface NodeEventEmitterShim {
  on(event: string, listener: (...args: any[]) => void): this;
  once(event: string, listener: (...args: any[]) => void): this;
  removeListener(event: string, listener: (...args: any[]) => void): this;
}

interface NodeWritableShim extends NodeEventEmitterShim {
  write(chunk: Uint8Array | string): boolean;
  end(): void;
  destroyed?: boolean;
}

interface NodeReadableShim extends NodeEventEmitterShim {
  setEncoding?(encoding: string): void;
}

declare module "net" {
  interface Socket extends NodeEventEmitterShim {
    write(chunk: Uint8Array | string): boolean;
    end(): void;
    destroy(error?: Error): void;
    destroyed: boolean;
    unref(): this;
    ref(): this;
  }
  function createConnection(options: { path: string }): Socket;
}

declare module "child_process" {
  interface ChildProcess extends NodeEventEmitterShim {
    readonly pid?: number;
    readonly stdin: NodeWritableShim | null;
    readonly stdout: NodeReadableShim | null;
    readonly stderr: NodeReadableShim | null;
    readonly exitCode: number | null;
    readonly signalCode: string | null;
    kill(signal?: string): boolean;
    unref(): void;
  }
  function spawn(
    command: string,
    args: readonly string[],
    options?: {
      stdio?: ("pipe" | "inherit" | "ignore")[];
      env?: { [key: string]: string | undefined };
      cwd?: string;
    },
  ): ChildProcess;
}

declare module "fs" {
  function appendFileSync(path: string, data: string): void;
  function readFileSync(path: string, encoding: "utf8"): string;
  function openSync(path: string, flags: string, mode?: number): number;
  function writeSync(fd: number, data: string): number;
  function fsyncSync(fd: number): void;
  function closeSync(fd: number): void;
  function renameSync(from: string, to: string): void;
  function unlinkSync(path: string): void;
  function mkdirSync(path: string, options: { recursive: boolean; mode?: number }): void;
}

declare var process: {
  env: { [key: string]: string | undefined };
  argv: string[];
  platform: string;
  pid: number;
};
