// @react-native-async-storage/async-storage's types for what the offline example uses.
export interface AsyncStorageStatic {
  getItem(key: string): Promise<string | null>;
  setItem(key: string, value: string): Promise<void>;
  removeItem(key: string): Promise<void>;
}
declare const AsyncStorage: AsyncStorageStatic;
export default AsyncStorage;
