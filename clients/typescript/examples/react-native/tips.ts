// tips.ts — a tipsd client per signed-in user, for an app whose tips are served by a hosted tipsd
// (`tipsd serve --hosted`, which verifies the app's own JWTs). The user signs in with Firebase Auth here; any
// identity provider whose SDK hands out a JWT (Auth0, Supabase, Cognito…) fits the same provider shape.
import type { FirebaseAuthTypes } from "@react-native-firebase/auth";
import { createClient, TipsClient, TokenRequest, webSocketTransport } from "@tipsd/client";

/** The hosted tipsd's address (wss:// in production: the token travels with the upgrade). */
export const TIPSD_URL = "wss://tips.example.com/";

/**
 * The token provider the client asks whenever it needs a token: the user's current ID token to connect and to
 * reconnect, and a freshly issued one (`getIdToken(true)`) when it refreshes the session shortly before the token
 * expires — Firebase's ID tokens last an hour; the client asks a minute before and sends the new one with
 * `auth/refresh` on the live connection, so subscriptions stay.
 */
export function idTokenProvider(user: FirebaseAuthTypes.User): (request: TokenRequest) => Promise<string> {
  return (request) => user.getIdToken(request.reason === "refresh");
}

/**
 * The signed-in user's client. It connects in the background and never throws at the app: without tipsd (or
 * offline) every call is a no-op and tips stay hidden; it reconnects by itself, asking the provider again.
 */
export function tipsClientFor(user: FirebaseAuthTypes.User): TipsClient {
  return createClient({ transport: webSocketTransport(TIPSD_URL, { token: idTokenProvider(user) }) });
}
