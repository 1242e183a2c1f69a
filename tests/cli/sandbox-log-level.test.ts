// Rule: INTERLOCK_LOG_LEVEL takes the same levels wherever it is read. `interlock sandbox` (compose's sandbox service
// passes the variable through) refuses a level the service refuses, exit 2 naming the variable, not with pino's own
// sentence ("default level:verbose must be included in custom levels") and exit 1, nor by running with a level
// (`INFO`) that `serve` refuses. The sandbox imports nothing from src/, so it keeps its own list: this test holds the
// two lists together.
import { expect, it } from 'vitest';
import { LOG_LEVELS as SANDBOX_LEVELS, createLogger } from '../../sandbox/core/log.js';
import { LOG_LEVELS } from '../../src/config.js';
import { runCli } from './run-cli.js';

it('the sandbox takes exactly the levels the service\'s configuration takes', () => {
  expect([...SANDBOX_LEVELS].sort()).toEqual([...LOG_LEVELS].sort());
});

it('the sandbox\'s logger reads empty or blank as unset (info), as loadConfig does, and refuses the rest naming INTERLOCK_LOG_LEVEL', () => {
  expect(createLogger('').level).toBe('info');
  expect(createLogger('  ').level).toBe('info');
  expect(createLogger('silent').level).toBe('silent');
  for (const level of ['verbose', 'INFO', ' warn']) expect(() => createLogger(level), level).toThrow('INTERLOCK_LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent');
});

it('interlock sandbox with INTERLOCK_LOG_LEVEL=verbose exits 2 naming INTERLOCK_LOG_LEVEL, before it listens', async () => {
  const run = await runCli(['sandbox', '--port', '0'], { INTERLOCK_LOG_LEVEL: 'verbose' }, { timeoutMs: 10_000 });
  expect(run.stdout).not.toContain('listening');
  expect(run.code, run.stderr).toBe(2);
  expect(run.stderr).toContain('INTERLOCK_LOG_LEVEL must be one of');
}, 30_000);

it('interlock sandbox refuses INTERLOCK_LOG_LEVEL=INFO as serve does, instead of running', async () => {
  const serve = await runCli(['keys', 'public'], { INTERLOCK_LOG_LEVEL: 'INFO' }, { timeoutMs: 10_000 });
  expect(serve.code).toBe(2);
  const sandbox = await runCli(['sandbox', '--port', '0'], { INTERLOCK_LOG_LEVEL: 'INFO' }, { timeoutMs: 5_000 });
  expect(sandbox.stdout).not.toContain('listening');
  expect(sandbox.code, sandbox.stderr).toBe(2);
  expect(sandbox.stderr).toContain('INTERLOCK_LOG_LEVEL');
}, 30_000);
