// `interlock keys generate|public|adopt`: the gate's Ed25519 signing key, the public key auditors verify with, and the
// deployment's record of the keys it signs with (adopt: on purpose, after a key leaked or was lost).
import { existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { Command } from 'commander';
import { loadConfig } from '../config.js';
import { kindOf } from '../files.js';
import { signingKeyFromPem, type SigningKey } from '../core/signing.js';
import { deploymentKeysOf, isRedisOutage, isRedisTimeout, RedisReplyLost, redisTurnedAway, shownUrl, type Adoption, type DeploymentKeys } from '../interlock.js';
import { danglingLink, danglingLinkMessage, keyFileExposure, keyFilePath, publicKeyPem, readKeyFile, unreadableKeyMessage, verifyingKeys, writeNewSigningKey } from '../keys/key-store.js';
import { CliFailure, EXIT_BAD_INPUT, EXIT_FAILED } from './failure.js';
import { printJson, printProblem, whenOutputLost } from './output.js';
import { whereLooked, withStores } from './stores.js';

export function addKeysCommands(program: Command): void {
  const keys = program.command('keys').description('manage the receipt signing key');

  keys
    .command('generate')
    .description('generate a new Ed25519 signing key (never overwrites one)')
    .option('--out <file>', 'where to write the private key (default: INTERLOCK_SIGNING_KEY_FILE or DATA_DIR/keys/signing-key.pem)')
    .action((options: { out?: string }) => {
      if (options.out === '') throw new CliFailure('--out is empty: give the path of the new key file, or leave --out out for the default (INTERLOCK_SIGNING_KEY_FILE, or DATA_DIR/keys/signing-key.pem).', EXIT_BAD_INPUT);
      const path = options.out ?? keyFilePath(loadConfig());
      const there = existsSync(path) ? statSync(path) : null;
      if (there?.isDirectory()) throw new CliFailure(`${path} is a directory; --out takes the path of the key file to write (e.g. ${join(path, 'signing-key.pem')}).`, EXIT_BAD_INPUT);
      // A FIFO, a socket or a device there is no key: saying one exists (exit 1) would send the caller looking for it.
      if (there && !there.isFile()) throw new CliFailure(`${path} is ${kindOf(there)}, not a regular file; --out takes the path of a new key file.`, EXIT_BAD_INPUT);
      const target = danglingLink(path);
      if (target !== null) throw new CliFailure(danglingLinkMessage(path, target), EXIT_BAD_INPUT);
      // A key already there is the answer no (exit 1); a path that cannot be written is the call's to fix (exit 2).
      const key = writeNewSigningKey(path);
      if (key === null) throw new CliFailure(`A signing key already exists at ${path}; move it aside first (receipts it signed still need its public key).`, EXIT_FAILED);
      whenOutputLost(`Signing key ${key.kid} was written to ${path}: \`interlock keys public --key ${path}\` prints its public key.`, true);
      printJson({ kid: key.kid, privateKeyFile: path, publicKey: publicKeyPem(key) });
    });

  keys
    .command('public')
    .description('print the public key (PEM) that verifies this gate\'s receipts')
    .option('--key <file>', 'private key file (default: the configured signing key)')
    .action((options: { key?: string }) => {
      if (options.key === '') throw new CliFailure('--key is empty: give the path of the private key file, or leave --key out for the configured signing key (INTERLOCK_SIGNING_KEY_FILE, or DATA_DIR/keys/signing-key.pem).', EXIT_BAD_INPUT);
      const path = options.key ?? keyFilePath(loadConfig());
      let pem: string;
      try {
        pem = readKeyFile(path);
      } catch (error) {
        printProblem(unreadableKeyMessage(path, error));
        process.exitCode = EXIT_BAD_INPUT;
        return;
      }
      let key;
      try {
        key = signingKeyFromPem(pem);
      } catch (error) {
        printProblem(`${path} is not a usable signing key: ${(error as Error).message}`);
        process.exitCode = EXIT_BAD_INPUT;
        return;
      }
      const exposure = keyFileExposure(path);
      if (exposure !== null) printProblem(exposure.message);
      process.stderr.write(`kid ${key.kid}\n`);
      process.stdout.write(publicKeyPem(key));
    });

  keys
    .command('adopt')
    .description("make this process's signing key the only key of the deployment on its Redis and key prefix, on purpose: the way away from a key that leaked (a rotation would have to keep trusting it) or was lost")
    .option('--yes', 'make the change (without it, nothing is changed: it says what it would change)')
    .action(async (options: { yes?: boolean }) => {
      const path = keyFilePath(loadConfig());
      // The key is read from its file, never made: a key made now would be one nothing else holds. The stores' own
      // key is not used: a running service found through service.json lends commands its key, not the one to adopt.
      // (withStores says when the key file is open to others.)
      const key = configuredKey(path);
      await withStores(async ({ stores, config }) => {
        const record = deploymentKeysOf(stores);
        const was = await record.read();
        const where = whereLooked(config);
        const dropped = was.kids.filter((kid) => kid !== key.kid);
        const alone = was.kids.length === 1 && dropped.length === 0 && was.newest === key.kid;
        if (!alone && options.yes !== true) {
          throw new CliFailure(`Nothing was changed. With --yes this makes key ${key.kid} (${path}) the only signing key of the deployment ${where}, which records ${recordText(was)}${dropped.length === 0 ? '' : `: a process or command signing with ${dropped.join(', ')} would be refused at its next start`}. Run it again with --yes to make the change.`, EXIT_BAD_INPUT);
        }
        let adoption: Adoption = 'unchanged';
        if (!alone) {
          try {
            adoption = await record.adopt(key.kid, was);
          } catch (error) {
            throw adoptionFailure(error, key, config.redisUrl) ?? error;
          }
        }
        if (adoption === 'changed') {
          const now = await record.read();
          throw new CliFailure(`Nothing was changed: the deployment's record changed since it was read (it recorded ${recordText(was)}, and records ${recordText(now)} now: another process joined or rotated meanwhile). Run it again to see the record as it is now.`, EXIT_FAILED);
        }
        if (adoption === 'adopted') whenOutputLost(`Key ${key.kid} is now the only signing key of the deployment ${where}: \`interlock keys adopt\` shows it.`, true);
        printJson({ kid: key.kid, privateKeyFile: path, redis: shownUrl(config.redisUrl), keyPrefix: config.keyPrefix, changed: adoption === 'adopted', was: { kids: was.kids, newest: was.newest }, now: { kids: [key.kid], newest: key.kid } });
        printProblem(adoption === 'adopted' ? `Key ${key.kid} is now the only signing key of the deployment ${where}.` : `Key ${key.kid} was already the only signing key of the deployment ${where}; nothing was changed.`);
        if (dropped.length > 0) {
          printProblem(`A process or command signing with ${dropped.join(', ')} is refused at its next start; one running now goes on signing with its key until it is restarted: restart every process with this one. Receipts those keys signed verify only where their public keys are listed in INTERLOCK_RETIRED_PUBLIC_KEYS_FILE (and with auditors who hold them): remove a leaked key's block from that file everywhere it is kept.`);
          const retired = verifyingKeys(null, config.retiredPublicKeysFile);
          const listed = dropped.filter((kid) => retired.has(kid));
          if (listed.length > 0) printProblem(`INTERLOCK_RETIRED_PUBLIC_KEYS_FILE (${config.retiredPublicKeysFile ?? ''}) still lists ${listed.join(', ')}: signatures by ${listed.length === 1 ? 'it' : 'them'} are still called valid here. Remove ${listed.length === 1 ? 'its block' : 'their blocks'} if ${listed.length === 1 ? 'it' : 'they'} may have leaked.`);
        }
        // withStores lends a command the key of a running service found through service.json, when it is not this one.
        if (stores.signingKey.kid !== key.kid) printProblem(`The running service found through service.json signs with ${stores.signingKey.kid}, not ${key.kid}: it goes on signing with it until it is restarted with ${path}.`);
      }, { signs: false });
    });
}

/** The private key at `path` (INTERLOCK_SIGNING_KEY_FILE, or the data directory's), or a CliFailure (exit 2) saying why not. */
function configuredKey(path: string): SigningKey {
  let pem: string;
  try {
    pem = readKeyFile(path);
  } catch (error) {
    throw new CliFailure(`${unreadableKeyMessage(path, error)} Nothing was changed.`, EXIT_BAD_INPUT);
  }
  try {
    return signingKeyFromPem(pem);
  } catch (error) {
    throw new CliFailure(`${path} is not a usable signing key: ${(error as Error).message.replace(/\.$/, '')}. Nothing was changed.`, EXIT_BAD_INPUT);
  }
}

/** The deployment's record in words: its kids and the one it rotated to last. */
function recordText(record: DeploymentKeys): string {
  if (record.kids.length === 0) return 'no key (a first start records its own)';
  const newest = record.newest === null ? 'which one it rotated to last is not known' : `rotated to ${record.newest} last`;
  return `${record.kids.join(', ')} (${newest})`;
}

/**
 * The adoption's failure in the operator's words, or null for one to pass on. A Redis lost after the script was sent
 * may have run it: never "nothing was changed" (withStores would say so, since a check by the same script writes
 * nothing).
 */
function adoptionFailure(error: unknown, key: SigningKey, redisUrl: string): CliFailure | null {
  if (redisTurnedAway(error) === 'OOM') return new CliFailure(`Redis at ${shownUrl(redisUrl)} is full: it refused to record key ${key.kid} with OOM, and nothing was changed. Free space or raise its maxmemory (README "Retention"), then run it again.`, EXIT_BAD_INPUT, { cause: error });
  if (!(error instanceof RedisReplyLost) && !isRedisTimeout(error) && !isRedisOutage(error)) return null;
  const what = error instanceof Error ? error.message : String(error);
  return new CliFailure(`Lost Redis at ${shownUrl(redisUrl)} (${what}) after asking it to record key ${key.kid}, so it may or may not be the deployment's only key now. Once Redis answers, run \`interlock keys adopt\` without --yes to see the record.`, EXIT_BAD_INPUT, { cause: error });
}
