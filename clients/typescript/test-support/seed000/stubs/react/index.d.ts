// The React hooks the seed's code uses, with React's signatures.
export declare function useState<S>(initialState: S | (() => S)): [S, (value: S | ((previous: S) => S)) => void];
export declare function useEffect(effect: () => void | (() => void), deps?: readonly unknown[]): void;
export declare function useSyncExternalStore<Snapshot>(
  subscribe: (onStoreChange: () => void) => () => void,
  getSnapshot: () => Snapshot,
  getServerSnapshot?: () => Snapshot,
): Snapshot;
