"use strict";
// expo-router's imperative router, recording where the app navigated (`pushed`, for the tests).
const pushed = [];
exports.pushed = pushed;
exports.router = {
  push(href) {
    pushed.push(href);
  },
};
