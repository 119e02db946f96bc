// The automatic JSX runtime ("jsx": "react-jsx").
export declare function jsx(type: unknown, props: unknown, key?: string): JSX.Element;
export declare function jsxs(type: unknown, props: unknown, key?: string): JSX.Element;
export declare const Fragment: unique symbol;
