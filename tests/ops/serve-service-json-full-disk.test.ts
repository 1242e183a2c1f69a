// Rule: serve writes <dataDir>/service.json whole or not at all (temporary file, flushed, renamed into place), 0600 as
// it holds the API tokens: a disk that fills while serve marks the file stopped leaves the file it wrote at the start
// as it was, never empty or cut short (which every command would then have to refuse), and no temporary file beside
// it. The full disk is simulated in the serve process (a module preloaded with --import): once the test says so, every
// write to service.json, in place or through its temporary file, fails ENOSPC after the file is made or emptied.
import { spawn } from 'node:child_process';
import { mkdirSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { REPO, tempDir } from '../cli/run-cli.js';

const temp = tempDir('serve-svcjson-full');
afterAll(() => temp.remove());

const PRELOAD = `
import fs from 'node:fs';
import { syncBuiltinESMExports } from 'node:module';
import { basename, join } from 'node:path';
const dir = process.env.INTERLOCK_DATA_DIR;
const full = () => fs.existsSync(join(dir, 'disk-full'));
const enospc = () => Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC', syscall: 'write', errno: -28 });
const real = { openSync: fs.openSync, closeSync: fs.closeSync, writeSync: fs.writeSync, writeFileSync: fs.writeFileSync };
const temporaryFds = new Set();
fs.openSync = (path, ...rest) => {
  const fd = real.openSync(path, ...rest);
  if (typeof path === 'string' && basename(path).startsWith('.service.json.')) temporaryFds.add(fd);
  return fd;
};
fs.closeSync = (fd) => {
  temporaryFds.delete(fd);
  real.closeSync(fd);
};
fs.writeSync = (fd, ...rest) => {
  if (full() && temporaryFds.has(fd)) throw enospc();
  return real.writeSync(fd, ...rest);
};
fs.writeFileSync = (path, data, options) => {
  if (full() && typeof path === 'string' && basename(path) === 'service.json') {
    real.writeFileSync(path, '', options);
    throw enospc();
  }
  return real.writeFileSync(path, data, options);
};
syncBuiltinESMExports();
`;

it('a full disk when serve marks service.json stopped leaves the file it wrote whole, 0600, and no temporary file', async () => {
  const dataDir = join(temp.dir, 'data');
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const preload = join(temp.dir, 'full-disk.mjs');
  writeFileSync(preload, PRELOAD);
  const env = { ...process.env, INTERLOCK_DATA_DIR: dataDir, INTERLOCK_LOG_LEVEL: 'info', REDIS_URL: '', STRIPE_SECRET_KEY: '', STRIPE_API_BASE: '', INTERLOCK_KEY_PREFIX: '', NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --import ${preload}` };
  const child = spawn(process.execPath, ['bin/interlock.js', 'serve', '--port', '0'], { cwd: REPO, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  for (const stream of [child.stdout, child.stderr]) stream.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  try {
    for (let i = 0; i < 600 && !output.includes('interlock serving'); i += 1) {
      if (child.exitCode !== null) break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(output, output).toContain('interlock serving');
    const file = join(dataDir, 'service.json');
    const written = readFileSync(file, 'utf8');
    expect((JSON.parse(written) as { pid: number }).pid).toBe(child.pid);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    writeFileSync(join(dataDir, 'disk-full'), '');
    child.kill('SIGTERM');
    await exited;
    expect(readFileSync(file, 'utf8')).toBe(written);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(readdirSync(dataDir).filter((name) => name.endsWith('.tmp'))).toEqual([]);
  } finally {
    if (child.exitCode === null) child.kill('SIGKILL');
  }
}, 120_000);
