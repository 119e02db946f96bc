// @react-native-firebase/auth's types for what the example uses.
export declare namespace FirebaseAuthTypes {
  interface User {
    uid: string;
    /** The user's Firebase ID token (a JWT, valid one hour); `forceRefresh` asks Firebase for a new one. */
    getIdToken(forceRefresh?: boolean): Promise<string>;
  }
  interface Module {
    readonly currentUser: User | null;
    onAuthStateChanged(listener: (user: User | null) => void): () => void;
  }
}
declare function auth(): FirebaseAuthTypes.Module;
export default auth;
