// A stand-in for what a suite's beforeAll makes: a test file names it at its top, before it exists, and uses it in
// its tests and hooks.

/**
 * Stands for what `current` gives once the suite's beforeAll made it. Used before then (at a file's top, or in a
 * hook registered before the suite's), it throws naming `what`. It forwards reads, writes and `in`; it is not the
 * value itself, so do not compare it, spread it or list its keys.
 */
export function startedLater<T extends object>(what: string, current: () => T | undefined): T {
  const started = (): T => {
    const value = current();
    if (value === undefined) throw new Error(`the ${what} is used before its suite started it (in a test or hook, not at a file's top)`);
    return value;
  };
  return new Proxy({} as T, {
    get: (_, key) => Reflect.get(started(), key) as unknown,
    set: (_, key, value) => Reflect.set(started(), key, value),
    has: (_, key) => Reflect.has(started(), key),
  });
}
