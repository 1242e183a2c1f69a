import { availableParallelism } from 'node:os';
import { configDefaults, defineConfig } from 'vitest/config';

/**
 * Test files that need a process of their own (a fresh one each): those that replace a module with vi.mock (they
 * need a module graph of their own; tests/suite-config.test.ts fails if one is missing here), and those that assert
 * on what a whole process holds (the default worker ids its senders hold: a sender another file left open would
 * hold the first one).
 */
export const ISOLATED_TEST_FILES = [
  'tests/keys/thread-signer.test.ts',
  'tests/cli/compiled-copy-cleanup-race.test.ts',
  'tests/cli/compiled-copy-saved-mid-build.test.ts',
  'tests/gate/default-worker-id.test.ts',
  'tests/gate/refused-start-no-heartbeat.test.ts',
  'tests/scenarios/out-lock-takeover.test.ts',
];

const TEST_FILES = ['tests/**/*.test.ts', 'sandbox/**/*.test.ts', 'src/**/*.test.ts'];

/** What both projects run with. */
const common = {
  testTimeout: 30_000,
  hookTimeout: 60_000,
  pool: 'forks',
  env: { INTERLOCK_LOG_LEVEL: 'silent' },
} as const;

export default defineConfig({
  test: {
    // Three test files at once even on two cores: most of the slow files wait on processes they spawned (serve, the
    // Stripe CLI, a private redis-server), so the default (one per core but one) left half the machine idle and the
    // suite took 13.5 minutes here; with two it took about 10, and 14 on a slower machine as the suite grew. Each
    // file keeps its own key prefix and ports.
    maxWorkers: Math.max(3, availableParallelism() - 1),
    // Run once for the whole run, by the root: a project that extended this config would run them again, each with
    // a directory of outcomes of its own, and the coverage check of all but one would find none.
    globalSetup: ['tests/support/outcome-coverage.ts', 'tests/support/code-cache.ts'],
    projects: [
      // A worker process runs one file after another in the modules it has loaded, instead of a fresh process per
      // file importing src/ again (about 0.9 s a file, 220 s of the suite's 760 s here; 110 s less with this). Every
      // file already keeps its own Redis key prefix, ports and temp directories, and none sets process.env.
      { test: { ...common, name: 'shared', isolate: false, include: TEST_FILES, exclude: [...configDefaults.exclude, ...ISOLATED_TEST_FILES] } },
      { test: { ...common, name: 'isolated', isolate: true, include: ISOLATED_TEST_FILES } },
    ],
  },
});
