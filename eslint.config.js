// Lint rules, and the layer fences as `no-restricted-imports` zones (STYLE habit 1, issue 9 §1). The same fences
// are checked again by tests/fences.test.ts, which resolves every import with the TypeScript parser; that test
// also lints small samples with this file (every socket module, every composition root), so a zone or a list
// here that drifts from tests/support/fences.ts fails it.
// A zone sees the specifier as written, not the file it resolves to, so "from a parent folder" is spelled out
// for every depth a file can have (up()).
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

const socketModules = [
  'ioredis', 'bullmq', 'express', 'stripe', '@anthropic-ai/sdk', 'ws', 'undici',
  'node:http', 'node:https', 'node:http2', 'node:net', 'node:tls', 'node:dgram',
  'http', 'https', 'http2', 'net', 'tls', 'dgram',
];

/** The files of src/ that wire the program together and may therefore reach into queues/, webhooks/, scenarios/, sandbox/. */
const compositionRoots = ['src/main.ts'];

const outerLayers = ['queues', 'webhooks', 'scenarios', 'sandbox'];

/** `../folder/**`, `../../folder/**`, ... : the folder `folder` at the repository root, seen from any depth. */
const up = (folder, rest = '**') => [1, 2, 3, 4, 5].map((depth) => `${'../'.repeat(depth)}${folder}/${rest}`);

const globals = { process: 'readonly', console: 'readonly', setTimeout: 'readonly', clearTimeout: 'readonly', setInterval: 'readonly', clearInterval: 'readonly', Buffer: 'readonly', URL: 'readonly', AbortController: 'readonly', AbortSignal: 'readonly', fetch: 'readonly', setImmediate: 'readonly', queueMicrotask: 'readonly', TextEncoder: 'readonly', TextDecoder: 'readonly', structuredClone: 'readonly' };

export default tseslint.config(
  { ignores: ['node_modules/**', 'dist/**', 'coverage/**', '.data/**', '.scratch/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { globals },
    rules: {
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/no-non-null-assertion': 'error',
      '@typescript-eslint/consistent-type-imports': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'no-restricted-syntax': ['error', { selector: 'TSEnumDeclaration', message: 'Use an `as const` union instead of an enum.' }],
    },
  },
  {
    // src/ never reaches into the outer folders, except where the program is wired together.
    files: ['src/**/*.ts'],
    ignores: compositionRoots,
    rules: {
      'no-restricted-imports': ['error', {
        patterns: outerLayers.map((layer) => ({ group: up(layer), message: `src/ imports nothing from ${layer}/; only the composition root (${compositionRoots.join(', ')}) may.` })),
      }],
    },
  },
  {
    // Later than the src/ zone, so it replaces it for src/core: a superset, since nothing outside src/core is allowed.
    files: ['src/core/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', {
        paths: socketModules.map((name) => ({ name, message: 'src/core is pure: it never touches a socket or an adapter.' })),
        patterns: [
          { group: socketModules.map((name) => `${name}/*`), message: 'src/core is pure: it never touches a socket or an adapter.' },
          { group: ['../*', '../**'], message: 'src/core imports nothing outside src/core.' },
        ],
      }],
      'no-restricted-properties': ['error', { object: 'Date', property: 'now', message: 'Time is an input to the core.' }, { object: 'Math', property: 'random', message: 'Randomness is an input to the core.' }],
    },
  },
  {
    files: ['sandbox/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', { patterns: [{ group: up('src'), message: 'sandbox/ imports nothing from src/: it stands in for Stripe and must not know the gate.' }] }],
    },
  },
  {
    files: ['queues/**/*.ts', 'webhooks/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', { patterns: [{ group: [...up('src'), ...up('src', 'interlock.js').map((entry) => `!${entry}`)], message: 'queues/ and webhooks/ use src/ only through src/interlock.ts.' }] }],
    },
  },
  {
    files: ['scenarios/**/*.ts'],
    ignores: ['scenarios/baselines/**'],
    rules: {
      'no-restricted-imports': ['error', { patterns: [{ group: [...up('src'), ...up('src', 'interlock.js').map((entry) => `!${entry}`)], message: 'scenarios/ uses src/ only through src/interlock.ts.' }] }],
    },
  },
  {
    // The baselines are the other systems of the seeds' tables: they never share the gate's code.
    files: ['scenarios/baselines/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', { patterns: [{ group: [...up('src'), ...up('sandbox')], message: 'scenarios/baselines/ imports nothing from src/ or sandbox/: the baselines never share the gate\'s code.' }] }],
    },
  },
  {
    files: ['tests/**/*.ts', 'sandbox/**/*.test.ts', '**/*.test.ts'],
    rules: { '@typescript-eslint/no-non-null-assertion': 'off' },
  },
);
