import type { JsonRpcErrorObject } from "./protocol.js";

/** The daemon answered a request with a JSON-RPC error (see `ErrorCode`). */
export class TipsdError extends Error {
  readonly code: number;
  readonly data: unknown;
  readonly method: string;

  constructor(method: string, error: JsonRpcErrorObject) {
    super(`${method}: ${error.message} (${error.code})`);
    this.name = "TipsdError";
    this.code = error.code;
    this.data = error.data;
    this.method = method;
  }
}

export type ConnectionErrorCode =
  /** No connection to the daemon right now (absent, or between reconnection attempts). */
  | "ENOTCONNECTED"
  /** The connection closed while the request was in flight. */
  | "ECONNCLOSED"
  /** No answer within `requestTimeoutMs`. */
  | "ETIMEDOUT"
  /** `close()` was called on the client. */
  | "ECLOSED"
  /** The daemon speaks an incompatible protocol version or refused `initialize`. */
  | "EPROTOCOL"
  /**
   * Hosted mode: the daemon refused the sign-in (a missing, invalid or expired token: `cause` is the
   * {@link TipsdError}, whose `data.reason` says which), or ended the session because its token expired.
   */
  | "EUNAUTHORIZED";

/** The request could not be delivered or answered (only surfaced in `strict` mode). */
export class ConnectionError extends Error {
  readonly code: ConnectionErrorCode;
  readonly method: string | undefined;
  readonly cause: unknown;

  constructor(code: ConnectionErrorCode, message: string, method?: string, cause?: unknown) {
    super(method ? `${method}: ${message}` : message);
    this.name = "ConnectionError";
    this.code = code;
    this.method = method;
    this.cause = cause;
  }
}
