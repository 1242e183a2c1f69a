// `interlock keys generate|public`: the gate's Ed25519 signing key and the public key auditors verify with.
import { existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { Command } from 'commander';
import { loadConfig } from '../config.js';
import { kindOf } from '../files.js';
import { signingKeyFromPem } from '../core/signing.js';
import { danglingLink, danglingLinkMessage, keyFileExposure, keyFilePath, publicKeyPem, readKeyFile, unreadableKeyMessage, writeNewSigningKey } from '../keys/key-store.js';
import { CliFailure, EXIT_BAD_INPUT, EXIT_FAILED } from './failure.js';
import { printJson, printProblem, whenOutputLost } from './output.js';

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
}
