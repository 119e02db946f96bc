// expo-modules-core's declaration (SDK 52): untyped unless the caller names the module's type.
export declare function requireOptionalNativeModule<ModuleType = any>(moduleName: string): ModuleType | null;
