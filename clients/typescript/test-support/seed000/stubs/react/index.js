"use strict";
// Just enough React to run seed 000's hooks outside an app: function components rendered by `render` (not React's
// API; the tests' renderer), with useState, useEffect and useSyncExternalStore following React's rules — effects
// run after the render that scheduled them and their cleanups before the next run and at unmount; a state or
// store change re-renders (in a microtask, so a change during an effect does not re-enter the render).

let rendering = null;

function sameDeps(a, b) {
  return !!a && !!b && a.length === b.length && a.every((value, i) => Object.is(value, b[i]));
}

function hook(init) {
  if (!rendering) throw new Error("hooks can only be called while rendering a component");
  const instance = rendering;
  const index = instance.cursor++;
  if (!(index in instance.hooks)) instance.hooks[index] = init();
  return [instance, instance.hooks[index]];
}

function schedule(instance) {
  if (instance.scheduled || !instance.mounted) return;
  instance.scheduled = true;
  queueMicrotask(() => {
    instance.scheduled = false;
    instance.render();
  });
}

exports.useState = function useState(initialState) {
  const [instance, state] = hook(() => ({ value: typeof initialState === "function" ? initialState() : initialState }));
  const setState = (value) => {
    const next = typeof value === "function" ? value(state.value) : value;
    if (Object.is(next, state.value)) return;
    state.value = next;
    schedule(instance);
  };
  return [state.value, setState];
};

exports.useEffect = function useEffect(effect, deps) {
  const [instance, state] = hook(() => ({ deps: undefined, cleanup: undefined, ran: false }));
  if (state.ran && deps && sameDeps(state.deps, deps)) return;
  instance.effects.push(() => {
    if (state.cleanup) state.cleanup();
    const cleanup = effect();
    state.cleanup = typeof cleanup === "function" ? cleanup : undefined;
    state.deps = deps;
    state.ran = true;
  });
};

exports.useSyncExternalStore = function useSyncExternalStore(subscribe, getSnapshot) {
  const [instance, state] = hook(() => ({ subscribe: undefined, unsubscribe: undefined, getSnapshot, value: undefined }));
  state.getSnapshot = getSnapshot;
  state.value = getSnapshot();
  if (state.subscribe !== subscribe) {
    instance.effects.push(() => {
      if (state.unsubscribe) state.unsubscribe();
      state.subscribe = subscribe;
      const changed = () => {
        if (!Object.is(state.getSnapshot(), state.value)) schedule(instance);
      };
      state.unsubscribe = subscribe(changed);
      state.cleanup = () => state.unsubscribe && state.unsubscribe();
      changed(); // the store may have changed between the render and the subscription
    });
  }
  return state.value;
};

/**
 * Mounts a function component: `output` is what it last returned, `renders` how many times it ran; `unmount()`
 * runs every cleanup. A component that throws makes `render` (or the re-render) throw.
 */
exports.render = function render(Component) {
  const instance = {
    hooks: [],
    effects: [],
    cursor: 0,
    mounted: true,
    scheduled: false,
    output: undefined,
    renders: 0,
    render() {
      if (!instance.mounted) return;
      rendering = instance;
      instance.cursor = 0;
      try {
        instance.output = Component();
      } finally {
        rendering = null;
      }
      instance.renders++;
      for (const effect of instance.effects.splice(0)) effect();
    },
  };
  instance.render();
  return {
    get output() {
      return instance.output;
    },
    get renders() {
      return instance.renders;
    },
    unmount() {
      instance.mounted = false;
      for (const state of instance.hooks) if (state && state.cleanup) state.cleanup();
    },
  };
};
