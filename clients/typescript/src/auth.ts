/**
 * Signing in: the token a connection presents — tipsd's own token (`tipsd token`: 64 hex characters) for a daemon
 * serving one user, or, in hosted mode (`tipsd serve --hosted`), the app's JWT or the admin token — as a string or
 * a provider asked whenever one is needed, and when to refresh a session's token before it expires. No Node API:
 * this module runs in React Native and browsers too.
 */

/** What a {@link TokenProvider} is asked for. An object, so that members can be added without breaking providers. */
export interface TokenRequest {
  /**
   * `"connect"` for the first connection attempt, `"reconnect"` for every later one, `"refresh"` when the session's
   * token expires soon and the client replaces it on the live connection (`auth/refresh`, hosted mode). A provider
   * backed by an identity SDK returns its current token for the first two and a freshly issued one for `"refresh"`
   * (e.g. Firebase Auth's `getIdToken(true)`).
   */
  reason: "connect" | "reconnect" | "refresh";
}

/**
 * Returns the token to present (e.g. read from secure storage, fetched from your backend, or the signed-in user's
 * ID token). Called whenever a token is needed — before each connection attempt and before each refresh — and never
 * cached by the client.
 */
export type TokenProvider = (request: TokenRequest) => string | Promise<string>;

/** A fixed token, or a provider asked whenever a token is needed. */
export type TokenSource = string | TokenProvider;

/** The length of tipsd's own token (`tipsd token`); longer tokens (JWTs) do not fit a WebSocket subprotocol. */
export const DAEMON_TOKEN_LENGTH = 64;

/**
 * The token `source` gives for `reason`, without surrounding whitespace. A provider that throws, rejects or returns
 * something other than a non-empty string fails with a message naming the provider, never the token.
 */
export async function resolveToken(source: TokenSource, reason: TokenRequest["reason"]): Promise<string> {
  let token: unknown = source;
  if (typeof source === "function") {
    try {
      token = await source({ reason });
    } catch (e) {
      throw new Error(`the tipsd token provider failed: ${e instanceof Error ? e.message : String(e)}`);
    }
    if (typeof token !== "string") throw new Error(`the tipsd token provider returned ${token === null ? "null" : typeof token}, not a string`);
  }
  const trimmed = String(token).trim();
  if (!trimmed) throw new Error(typeof source === "function" ? "the tipsd token provider returned an empty token" : "no tipsd token given");
  return trimmed;
}

/** Refresh at most this long before the token expires. */
export const REFRESH_MARGIN_MS = 60_000;

/**
 * How long from `nowMs` until a session whose token expires at `expiresAt` (seconds since the epoch, as `initialize`
 * and `auth/refresh` report it) should be refreshed: a margin before the expiry — 60 s, or a tenth of the remaining
 * lifetime when that is shorter (a token valid for 5 minutes is refreshed 30 s early). 0 when that moment has passed.
 */
export function refreshDelayMs(expiresAt: number, nowMs: number): number {
  const lifetime = expiresAt * 1000 - nowMs;
  if (!(lifetime > 0)) return 0;
  return lifetime - Math.min(REFRESH_MARGIN_MS, lifetime / 10);
}
