// React's types for what the example uses (React 18 signatures).
export interface ReactElement {
  type: unknown;
  props: unknown;
  key: string | null;
}
export type ReactNode = ReactElement | string | number | boolean | null | undefined | readonly ReactNode[];
export declare function useSyncExternalStore<Snapshot>(
  subscribe: (onStoreChange: () => void) => () => void,
  getSnapshot: () => Snapshot,
  getServerSnapshot?: () => Snapshot,
): Snapshot;
export declare function useEffect(effect: () => void | (() => void), deps?: readonly unknown[]): void;
export declare function useState<S>(initialState: S | (() => S)): [S, (value: S | ((previous: S) => S)) => void];
export declare function useRef<T>(initialValue: T): { current: T };

declare global {
  namespace JSX {
    interface Element extends ReactElement {}
    interface ElementChildrenAttribute {
      children: {};
    }
    interface IntrinsicAttributes {
      key?: string | number;
    }
    // React Native renders components only: no intrinsic (DOM) elements.
    interface IntrinsicElements {}
  }
}
