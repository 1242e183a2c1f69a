// Loads the Lua scripts of ./scripts (each prefixed with lib.lua) and runs them by SHA, loading on NOSCRIPT.
// Every script answers one JSON string, so the reply reads the same over RESP2 and RESP3.
import { readFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Command } from 'ioredis';
import type { RedisClient } from './client.js';

const SCRIPT_DIR = join(dirname(fileURLToPath(import.meta.url)), 'scripts');

export const SCRIPT_NAMES = [
  'bind-5',
  'bind-existing-5',
  'bind-propose-10',
  'upkeep-3',
  'unindex-1',
  'read-state-1',
  'propose-5',
  'append-2',
  'settle-5',
  'late-5',
  'release-failed-3',
  'observe-2',
  'note-fact-1',
  'note-deletion-2',
  'share-deletion-1',
  'take-over-1',
  'resend-2',
  'release-claim-1',
  'mark-unknown-1',
  'check-epoch-2',
  'probe-heartbeat-1',
  'beat-1',
  'clear-heartbeat-1',
  'bind-approval-2',
  'grant-approval-1',
  'revoke-approval-2',
  'describe-approval-1',
  'set-cap-1',
  'act-3',
  'open-inbox-2',
  'close-inbox-3',
  'open-case-failure-5',
  'close-case-failures-4',
  'refresh-inbox-2',
  'set-case-status-1',
  'set-alert-3',
  'index-open-alerts-3',
  'enter-deployment-2',
  'take-reconcile-lease-2',
  'renew-reconcile-lease-1',
  'end-reconcile-pass-2',
  'release-reconcile-lease-1',
] as const;
export type ScriptName = (typeof SCRIPT_NAMES)[number];

type Script = { source: string; sha: string; keys: number };

function loadScripts(): Map<ScriptName, Script> {
  const lib = readFileSync(join(SCRIPT_DIR, 'lib.lua'), 'utf8');
  const scripts = new Map<ScriptName, Script>();
  for (const name of SCRIPT_NAMES) {
    const source = `${lib}\n${readFileSync(join(SCRIPT_DIR, `${name}.lua`), 'utf8')}`;
    const keys = Number(name.slice(name.lastIndexOf('-') + 1));
    scripts.set(name, { source, sha: createHash('sha1').update(source).digest('hex'), keys });
  }
  return scripts;
}

export type ScriptRunner = <T>(name: ScriptName, keys: readonly string[], args: readonly (string | number)[]) => Promise<T>;

/**
 * Sends a command whose arguments are already a flat list of strings. ioredis's constructor flattens every command's
 * arguments with Array.prototype.flat, about 0.15 µs an argument: for a dispatch step's 37 that was the largest
 * single cost of its Redis traffic in the process. A command made with none and given its list afterwards is the
 * same command (the constructor's only other work on them, stringifying, has nothing to do on strings).
 */
function sendStrings(redis: RedisClient, name: string, args: string[]): Promise<unknown> {
  const command = new Command(name, [], { replyEncoding: 'utf8' });
  command.args = args;
  void redis.sendCommand(command);
  return command.promise as Promise<unknown>;
}

/**
 * The scripts that change nothing anyone asked for: a command that ran only these changed nothing, whatever became of
 * its connection. The open-alerts index's backfill writes only an index derived from the alerts as stored (a read
 * of `interlock alerts` may complete it). The deployment's signing keys: a one-off command only checks them (`keys
 * adopt`, which writes them, answers a lost reply itself).
 */
const READ_ONLY_SCRIPTS: readonly ScriptName[] = ['read-state-1', 'describe-approval-1', 'probe-heartbeat-1', 'check-epoch-2', 'index-open-alerts-3', 'enter-deployment-2'];
let readOnlyScripts: ReadonlySet<string> | null = null;

/** Whether an EVALSHA's sha (or an EVAL's source) is one of READ_ONLY_SCRIPTS. */
export function isReadOnlyScript(shaOrSource: string): boolean {
  if (readOnlyScripts === null) {
    const scripts = loadScripts();
    readOnlyScripts = new Set(READ_ONLY_SCRIPTS.flatMap((name) => {
      const script = scripts.get(name);
      return script === undefined ? [] : [script.sha, script.source];
    }));
  }
  return readOnlyScripts.has(shaOrSource);
}

export function createScriptRunner(redis: RedisClient): ScriptRunner {
  const scripts = loadScripts();
  return async <T>(name: ScriptName, keys: readonly string[], args: readonly (string | number)[]): Promise<T> => {
    const script = scripts.get(name);
    if (!script) throw new Error(`No Lua script named ${name}`);
    if (keys.length !== script.keys) throw new Error(`Script ${name} takes ${script.keys} keys, got ${keys.length}`);
    // The command's whole argument list, built once: the script, the key count, the keys, the arguments.
    const wire = new Array<string>(2 + keys.length + args.length);
    wire[0] = script.sha;
    wire[1] = String(keys.length);
    let at = 2;
    for (const key of keys) wire[at++] = key;
    for (const arg of args) wire[at++] = typeof arg === 'string' ? arg : String(arg);
    let raw: unknown;
    try {
      raw = await sendStrings(redis, 'evalsha', wire);
    } catch (error) {
      if (!(error instanceof Error) || !error.message.includes('NOSCRIPT')) throw error;
      const withSource = wire.slice();
      withSource[0] = script.source;
      raw = await sendStrings(redis, 'eval', withSource);
    }
    if (typeof raw !== 'string') throw new Error(`Script ${name} answered ${typeof raw}, expected a JSON string`);
    return JSON.parse(raw) as T;
  };
}
