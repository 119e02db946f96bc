/**
 * @tipsd/client — the runtime-neutral core (Node, React Native, browsers), including the WebSocket transport
 * (`connectWebSocket`). Node transports (Unix socket, child process over stdio) are in `@tipsd/client/node`,
 * which also re-exports everything here. Nothing imported from here may use a Node API: the same files are
 * compiled to ES modules for browsers (`dist-browser/`, tsconfig.browser.json).
 */
export * from "./protocol.js";
export * from "./errors.js";
export * from "./framing.js";
export * from "./auth.js";
export * from "./transport.js";
export * from "./websocket.js";
export * from "./client.js";
export * from "./store.js";
export * from "./offline.js";
export * from "./native-module.js";
export { utf8Decode, utf8Encode } from "./utf8.js";
