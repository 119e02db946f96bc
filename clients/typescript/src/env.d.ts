// Ambient globals the core relies on. Every JavaScript host tipsd's clients run on (Node, React Native/Hermes,
// browsers) provides them; they are declared here so the core compiles with `lib: ["ES2020"]` and no
// @types/node or DOM lib. This file is not emitted: the shipped .d.ts files never mention these declarations.

declare function setTimeout(handler: () => void, ms?: number): unknown;
declare function clearTimeout(handle: unknown): void;

declare var console: {
  log(...args: unknown[]): void;
  warn(...args: unknown[]): void;
  error(...args: unknown[]): void;
  debug(...args: unknown[]): void;
};
