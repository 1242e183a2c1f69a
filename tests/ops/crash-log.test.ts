// Rule: a process that installed exitOnCrash (serve does, once it is up) and hits an exception nothing caught or a
// promise rejection nothing handled exits with 1, as Node would, leaving one structured fatal log line whose message
// and stack have secrets masked (Node's own report would print a Stripe key quoted in the error whole).
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';

const LOG = fileURLToPath(new URL('../../src/log.ts', import.meta.url));
const SECRET = 'sk_test_51CrashLogSecretValue0123456789';

function crashWith(failure: string): { status: number | null; lines: Record<string, unknown>[]; stderr: string } {
  const script = `import { createLogger, exitOnCrash } from ${JSON.stringify(LOG)};
exitOnCrash(createLogger('info'));
setTimeout(() => { process.stdout.write('still running'); }, 2000);
${failure}`;
  const ran = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { encoding: 'utf8', timeout: 30_000, env: { ...process.env, INTERLOCK_LOG_LEVEL: '' } });
  const lines = ran.stderr.split('\n').filter((line) => line.startsWith('{')).map((line) => JSON.parse(line) as Record<string, unknown>);
  return { status: ran.status, lines, stderr: ran.stderr + ran.stdout };
}

it.each([
  ['an unhandled rejection', `Promise.reject(new Error('Stripe refused ${SECRET}'));`, 'unhandled promise rejection'],
  ['an uncaught exception', `setImmediate(() => { throw new Error('Stripe refused ${SECRET}'); });`, 'uncaught exception'],
])('%s ends the process with 1 and one masked fatal line', (_name, failure, said) => {
  const { status, lines, stderr } = crashWith(failure);
  expect(status).toBe(1);
  expect(stderr).not.toContain('still running');
  expect(stderr).not.toContain(SECRET);
  expect(lines).toHaveLength(1);
  expect(lines[0]?.level).toBe(60);
  expect(String(lines[0]?.msg)).toContain(said);
  expect(JSON.stringify(lines[0]?.err)).toContain('Stripe refused sk_test_');
  expect(String(lines[0]?.stack)).toContain('Stripe refused sk_test_');
});
