// Rule: "A token is never logged or echoed" (webhooks/api/tokens.ts). `serve` shows the tokens it generated only to a
// terminal: with stdout anything else (a pipe, a file, the container's log under compose) its Tokens line says where
// they are kept (the tokens file, and service.json for scripts) and how to read one, and holds none of them.
// Rule: INTERLOCK_API_TOKENS naming a file is read as the key files are (a regular file of at most 1 MiB, opened
// without waiting): a FIFO named there is refused at start as invalid configuration (exit 2), naming the setting and
// what to give instead, never waited on for ever; a file past the cap is refused the same way.
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tokenLines } from '../../src/cli/token-lines.js';
import { LOCAL_TOKENS_FILE, loadOrCreateLocalTokens, loadTokenRegistry, MAX_TOKENS_FILE_BYTES, TokenConfigError } from '../../webhooks/api/tokens.js';
import { spawnWorker } from '../pipeline/pipeline-support.js';
import { startPrivateRedis, type PrivateRedis } from '../support/private-redis.js';
import { tempDir } from '../cli/run-cli.js';

const temp = tempDir('serve-tokens');
let redis: PrivateRedis;
beforeAll(async () => {
  redis = await startPrivateRedis(['--appendonly', 'yes', '--appendfsync', 'always', '--save', '']);
});
afterAll(async () => {
  await redis?.stop();
  temp.remove();
});

/** What a compose api runs with: a Redis given, every interface, INTERLOCK_API_TOKENS empty (tokens generated). */
const composeLike = (dataDir: string, tokens = '') => ({
  REDIS_URL: redis.url,
  INTERLOCK_KEY_PREFIX: `serve-tokens-${randomBytes(4).toString('hex')}`,
  INTERLOCK_DATA_DIR: dataDir,
  INTERLOCK_HOST: '0.0.0.0',
  STRIPE_SECRET_KEY: 'sk_test_servetokens',
  STRIPE_API_BASE: 'http://127.0.0.1:1',
  INTERLOCK_API_TOKENS: tokens,
});

describe('the generated tokens at start-up', () => {
  it('with stdout not a terminal, no token reaches the output; the Tokens line names the files and a command that reads one', async () => {
    const dataDir = join(temp.dir, 'data');
    mkdirSync(dataDir, { recursive: true });
    const service = spawnWorker(composeLike(dataDir), ['serve', '--roles', 'api', '--port', '0']);
    try {
      await service.ready;
      for (let i = 0; i < 100 && !service.logs().includes('For scripts:'); i += 1) await new Promise((resolve) => setTimeout(resolve, 50));
      const tokens = readFileSync(join(dataDir, 'api-tokens'), 'utf8')
        .split('\n')
        .filter((line) => line.startsWith('local-'))
        .map((line) => line.split(':')[2] ?? '');
      expect(tokens).toHaveLength(4);
      const output = service.logs();
      expect(tokens.filter((token) => output.includes(token))).toEqual([]);
      expect(output).toContain(`  Tokens    not printed (stdout is not a terminal): kept in ${join(dataDir, 'api-tokens')}, and for scripts in ${join(dataDir, 'service.json')}; read one with\n`);
      // The command printed reads the support token, from any directory.
      const command = output.split('\n').find((line) => line.includes('node -pe') && line.includes('.tokens.support'));
      expect(command).toBeDefined();
      const read = execFileSync('bash', ['-c', (command ?? '').trim().replace(/ {3}\(or .*\)$/, '')], { cwd: temp.dir, encoding: 'utf8' }).trim();
      expect(read).toBe(tokens[0]);
    } finally {
      await service.stop();
    }
  }, 90_000);

  it('a terminal is shown each token and the file; anything else neither token, and the file a process that wrote no service.json keeps them in', () => {
    const tokens = { support: 'tok-support-0123456789', approver: 'tok-approver-0123456789', auditor: 'tok-auditor-0123456789', operator: 'tok-operator-0123456789' };
    const shown = tokenLines(tokens, '.data/api-tokens', '.data/service.json', '.data', true).join('\n');
    for (const [role, token] of Object.entries(tokens)) expect(shown).toContain(`${role} ${token}`);
    expect(shown).toContain('(kept in .data/api-tokens)');
    for (const serviceFile of ['.data/service.json', null]) {
      const kept = tokenLines(tokens, '.data/api-tokens', serviceFile, '.data', false).join('\n');
      expect(Object.values(tokens).filter((token) => kept.includes(token))).toEqual([]);
      expect(kept).toContain('not printed (stdout is not a terminal): kept in .data/api-tokens');
    }
    expect(tokenLines(tokens, '.data/api-tokens', '.data/service.json', '.data', false)[1]).toBe(`            node -pe 'require(path.resolve(process.env.INTERLOCK_DATA_DIR || ".data", "service.json")).tokens.support'   (or .approver, .auditor, .operator)`);
  });
});

describe('INTERLOCK_API_TOKENS naming something other than a regular file', () => {
  it('a FIFO is refused at start (exit 2), naming INTERLOCK_API_TOKENS and what to give, never waited on', async () => {
    const fifo = join(temp.dir, 'tokens.fifo');
    execFileSync('mkfifo', [fifo]);
    const service = spawnWorker(composeLike(join(temp.dir, 'data-fifo'), fifo), ['serve', '--roles', 'api', '--port', '0']);
    try {
      const result = await Promise.race([service.exited.then((exit) => `exit ${exit.code}`), new Promise((resolve) => setTimeout(() => resolve('still starting after 45 s'), 45_000))]);
      expect(result, service.logs().slice(-2000)).toBe('exit 2');
      expect(service.logs()).toContain(`INTERLOCK_API_TOKENS names the file ${fifo}, which cannot be read (it is a FIFO (named pipe), not a regular file). Name a regular file of name:role:token lines, at most 1 MiB, or give the entries themselves.`);
    } finally {
      await service.stop(2_000);
    }
  }, 90_000);

  it('a file past the cap is refused as invalid configuration, naming the cap', () => {
    const file = join(temp.dir, 'tokens-large');
    writeFileSync(file, `${'#'.repeat(MAX_TOKENS_FILE_BYTES)}\nsam:support:itk_large_file_token_0123456\n`);
    const refused = (() => {
      try {
        loadTokenRegistry(file);
      } catch (error) {
        return error;
      }
      return null;
    })();
    expect(refused).toBeInstanceOf(TokenConfigError);
    expect(refused).toMatchObject({ code: 'invalid_config', message: expect.stringContaining(`INTERLOCK_API_TOKENS names the file ${file}, which cannot be read (it is 1.0 MiB, more than the 1 MiB a tokens file may be)`) as string });
  });

  it('the data directory\'s generated tokens file that cannot be read is named as that file, not as INTERLOCK_API_TOKENS, which is unset', () => {
    const dataDir = join(temp.dir, `generated-fifo-${randomBytes(3).toString('hex')}`);
    mkdirSync(dataDir);
    execFileSync('mkfifo', [join(dataDir, LOCAL_TOKENS_FILE)]);
    expect(() => loadOrCreateLocalTokens(dataDir)).toThrow(`The generated API tokens file ${join(dataDir, LOCAL_TOKENS_FILE)} cannot be read (it is a FIFO (named pipe), not a regular file). Remove it (a new one is generated at the next start)`);
  });
});
