// React Native's components and props for what the example uses.
import type { ReactElement, ReactNode } from "react";

export interface ViewProps {
  children?: ReactNode;
  style?: object;
  accessibilityRole?: string;
}
export interface TextProps {
  children?: ReactNode;
  style?: object;
}
export interface ButtonProps {
  title: string;
  onPress: () => void;
  disabled?: boolean;
}
export declare function View(props: ViewProps): ReactElement | null;
export declare function Text(props: TextProps): ReactElement | null;
export declare function Button(props: ButtonProps): ReactElement | null;
export declare function ActivityIndicator(props: { size?: "small" | "large" }): ReactElement | null;
export declare const StyleSheet: { create<T extends { [name: string]: object }>(styles: T): T };
