/**
 * @tipsd/client — the runtime-neutral core (Node, React Native, browsers). Node transports (Unix socket, child
 * process over stdio) are in `@tipsd/client/node`, which also re-exports everything here.
 */
export * from "./protocol";
export * from "./errors";
export * from "./framing";
export * from "./transport";
export * from "./client";
export * from "./store";
export { utf8Decode, utf8Encode } from "./utf8";
