// A verifying thread that never finishes loading, for tests/cli/verify-pool.test.ts: verifyMany must verify every
// file on its own thread, stop this one, and return, without waiting for it.
setInterval(() => undefined, 1_000);
await new Promise<never>(() => undefined);

export function threadShare(): void {
  throw new Error('a thread that never loaded was given a share');
}
