"use strict";
// The one function of expo-modules-core that seed 000 uses, as Expo implements it: the native module registered
// under that name (on globalThis.expo.modules), or null when the platform has none. The tests register one — or not.
exports.requireOptionalNativeModule = function requireOptionalNativeModule(moduleName) {
  const modules = globalThis.expo && globalThis.expo.modules;
  return (modules && modules[moduleName]) || null;
};
