// Global setup: makes the compiled copy of the sources (bin/compiled.js) once, before any test file starts, so the
// first tests that spawn the CLI do not each compile one at the same time (each would, then all but one discard it).
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

export function setup(): void {
  const repo = fileURLToPath(new URL('../..', import.meta.url));
  execFileSync(process.execPath, ['bin/interlock.js', '--version'], { cwd: repo, stdio: 'ignore', timeout: 60_000 });
}
