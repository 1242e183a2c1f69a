// `interlock keys generate|public|adopt`: the gate's Ed25519 signing key, the public key auditors verify with, and the
// deployment's record of the keys it signs with (adopt: on purpose, after a key leaked or was lost).
import { existsSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { Command } from 'commander';
import { loadConfig, type Config } from '../config.js';
import { kindOf } from '../files.js';
import { signingKeyFromPem, type SigningKey } from '../core/signing.js';
import { deploymentKeysOf, isRedisOutage, isRedisTimeout, RedisReplyLost, redisTurnedAway, shownUrl, type Adoption, type DeploymentKeys } from '../interlock.js';
import { danglingLink, danglingLinkMessage, keyFileExposure, keyFilePath, publicKeyPem, readKeyFile, shownKeyPath, unreadableKeyMessage, verifyingKeys, writeNewSigningKey } from '../keys/key-store.js';
import { CliFailure, EXIT_BAD_INPUT, EXIT_FAILED } from './failure.js';
import { printJson, printProblem, whenOutputLost } from './output.js';
import { serviceNamed, serviceReached, serviceSigningKey, whereLooked, withStores, type ServiceSigner } from './stores.js';

export function addKeysCommands(program: Command): void {
  const keys = program.command('keys').description('manage the receipt signing key');

  keys
    .command('generate')
    .description('generate a new Ed25519 signing key (never overwrites one)')
    .option('--out <file>', 'where to write the private key (default: INTERLOCK_SIGNING_KEY_FILE or DATA_DIR/keys/signing-key.pem)')
    .action((options: { out?: string }) => {
      if (options.out === '') throw new CliFailure('--out is empty: give the path of the new key file, or leave --out out for the default (INTERLOCK_SIGNING_KEY_FILE, or DATA_DIR/keys/signing-key.pem).', EXIT_BAD_INPUT);
      const config = options.out === undefined ? loadConfig() : null;
      const path = options.out ?? keyFilePath(config ?? loadConfig());
      const there = existsSync(path) ? statSync(path) : null;
      if (there?.isDirectory()) throw new CliFailure(`${path} is a directory; --out takes the path of the key file to write (e.g. ${join(path, 'signing-key.pem')}).`, EXIT_BAD_INPUT);
      // A FIFO, a socket or a device there is no key: saying one exists (exit 1) would send the caller looking for it.
      if (there && !there.isFile()) throw new CliFailure(`${path} is ${kindOf(there)}, not a regular file; --out takes the path of a new key file.`, EXIT_BAD_INPUT);
      const target = danglingLink(path);
      if (target !== null) throw new CliFailure(danglingLinkMessage(path, target), EXIT_BAD_INPUT);
      // The data directory's key path, named by nothing the operator gave, beside a service found through service.json
      // that signs with a key of its own: a key made there would be one the service does not hold (commands beside it
      // pass it over; it is not the deployment's), as keyOf never makes one beside a service either.
      const service = config !== null && config.signingKeyFile === null && there === null ? serviceReached(config) : null;
      if (service !== null) {
        throw new CliFailure(`Nothing was written: ${serviceNamed(service)} signs with key ${service.kid}${service.keyFile === null ? '' : ` (${service.keyFile})`}, and a key made at ${shownKeyPath(path)} would be one it does not sign with. To make the new key of a rotation, name its file: \`interlock keys generate --out FILE\` (README "Rotating the signing key"); \`interlock keys public\` prints the service's public key.`, EXIT_BAD_INPUT);
      }
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
      const config = options.key === undefined ? loadConfig() : null;
      // Without --key, beside a service found through service.json (running or stopped), the key its receipts verify
      // with is the one it signs with, wherever this process's own key file is.
      const service = config === null ? null : serviceSigningKey(config);
      if (config !== null && service !== null) {
        printServiceKey(config, service);
        return;
      }
      const path = options.key ?? keyFilePath(config ?? loadConfig());
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
      const configured = loadConfig();
      const path = keyFilePath(configured);
      // The key is read from its file, never made: a key made now would be one nothing else holds. The stores' own
      // key is not used: a running service found through service.json lends commands its key, not the one to adopt.
      // (withStores says when the key file is open to others.)
      // The data directory's key, named by nothing the operator gave, is adopted only when it is the key of the
      // service found through service.json: another one there is stale (a rotation's old key, maybe the one that
      // leaked), and adopting it would make the service's own key refused at its next start. A key to adopt on
      // purpose is named with INTERLOCK_SIGNING_KEY_FILE.
      const service = configured.signingKeyFile === null ? serviceReached(configured) : null;
      if (service !== null && !existsSync(path) && danglingLink(path) === null) throw notTheServiceKey(service, `no key is at ${shownKeyPath(path)}`);
      const key = configuredKey(path);
      if (service !== null && key.kid !== service.kid) throw notTheServiceKey(service, `the data directory's key ${shownKeyPath(path)} is ${key.kid}, not it`);
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
      }, { signs: false, actsOnNamedKey: true });
    });
}

/** `keys adopt` refused: the data directory's key (`what`: none, or another one) is not the key of `service`. */
function notTheServiceKey(service: ServiceSigner, what: string): CliFailure {
  const theirs = service.keyFile === null ? '' : ` (the service's own is ${service.keyFile})`;
  return new CliFailure(`Nothing was changed: ${serviceNamed(service)} signs with key ${service.kid}, and ${what}. Adopting a key the service does not sign with would make it the deployment's only key and refuse the service at its next start; a data directory's key left by a rotation may be the very key that leaked. Name the key to adopt: \`INTERLOCK_SIGNING_KEY_FILE=FILE npx interlock keys adopt\`${theirs}.`, EXIT_BAD_INPUT);
}

/**
 * `keys public` without --key beside a service found through service.json: the public half of the key it signs with,
 * and on stderr when this process's own key file (the data directory's, or INTERLOCK_SIGNING_KEY_FILE) holds another
 * key, or cannot be had. A service key this process cannot read is refused (exit 2): another key's public half would
 * call each of its receipts "signed with an unknown key".
 */
function printServiceKey(config: Config, found: NonNullable<ReturnType<typeof serviceSigningKey>>): void {
  const path = keyFilePath(config);
  const shown = shownKeyPath(path);
  const { service } = found;
  const own = ownKey(path);
  if (!('key' in found)) {
    // This process's own key file is named only when it is another file than the service's.
    const mine = service.keyFile !== null && resolve(path) === resolve(service.keyFile) ? '' : own === null ? `, and no key is at ${shown}` : own.kid === null ? `, and ${shown} cannot be used as a key` : `, and ${shown} holds key ${own.kid}, not it`;
    throw new CliFailure(`${capitalized(serviceNamed(service))} signs its receipts with key ${service.kid}, but ${found.why}${mine}: no public key was printed, since another key's verifies none of its receipts. Run this as a user who can read the service's key file, or pass that file with --key FILE.`, EXIT_BAD_INPUT);
  }
  if (!found.own) {
    const named = config.signingKeyFile === null ? shown : `INTERLOCK_SIGNING_KEY_FILE (${shown})`;
    const mine = own === null ? (config.signingKeyFile === null ? null : `${named} does not exist`) : own.kid === null ? `${named} cannot be used as a key` : `${named} holds key ${own.kid}`;
    if (mine !== null) printProblem(`${mine}; the key ${serviceNamed(service)} signs with, ${service.kid}, is printed instead (from its key file ${found.keyFile}).`);
  }
  const exposure = keyFileExposure(found.keyFile);
  if (exposure !== null) printProblem(exposure.message);
  process.stderr.write(`kid ${found.key.kid}\n`);
  process.stdout.write(publicKeyPem(found.key));
}

/** The key at `path`: null when there is no file, a kid of null when it holds no key that can be used. */
function ownKey(path: string): { kid: string | null } | null {
  if (!existsSync(path)) return null;
  try {
    return { kid: signingKeyFromPem(readKeyFile(path)).kid };
  } catch {
    return { kid: null };
  }
}

function capitalized(text: string): string {
  return `${text.charAt(0).toUpperCase()}${text.slice(1)}`;
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
