// Lint rules. The fence around src/core keeps the pure core free of sockets and adapters (STYLE habit 1).
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

const socketModules = ['ioredis', 'bullmq', 'express', 'stripe', '@anthropic-ai/sdk', 'node:http', 'node:https', 'node:net', 'http', 'https', 'net'];

export default tseslint.config(
  { ignores: ['node_modules/**', 'dist/**', 'coverage/**', '.data/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { globals: { process: 'readonly', console: 'readonly', setTimeout: 'readonly', clearTimeout: 'readonly', setInterval: 'readonly', clearInterval: 'readonly', Buffer: 'readonly', URL: 'readonly', AbortController: 'readonly', AbortSignal: 'readonly', fetch: 'readonly', setImmediate: 'readonly', queueMicrotask: 'readonly', TextEncoder: 'readonly', TextDecoder: 'readonly', structuredClone: 'readonly' } },
    rules: {
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/no-non-null-assertion': 'error',
      '@typescript-eslint/consistent-type-imports': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'no-restricted-syntax': ['error', { selector: 'TSEnumDeclaration', message: 'Use an `as const` union instead of an enum.' }],
    },
  },
  {
    files: ['src/core/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', {
        paths: socketModules.map((name) => ({ name, message: 'src/core is pure: it never touches a socket or an adapter.' })),
        patterns: [{ group: ['../redis/*', '../gate/*', '../stripe/*', '../../queues/*', '../../webhooks/*', '../../sandbox/*'], message: 'src/core must not import adapters.' }],
      }],
      'no-restricted-properties': ['error', { object: 'Date', property: 'now', message: 'Time is an input to the core.' }, { object: 'Math', property: 'random', message: 'Randomness is an input to the core.' }],
    },
  },
  {
    files: ['tests/**/*.ts', 'sandbox/**/*.test.ts', '**/*.test.ts'],
    rules: { '@typescript-eslint/no-non-null-assertion': 'off' },
  },
);
