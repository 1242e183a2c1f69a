// `interlock receipt verify|export`. Exit codes for verify: 0 valid, 1 invalid, 2 unreadable input, 3 nothing wrong
// but nothing authenticated either (no public key checked the signatures).
import { readFileSync, writeFileSync } from 'node:fs';
import type { Command } from 'commander';
import { publicKeySet } from '../core/signing.js';
import { verify } from '../core/verify.js';
import { loadConfig } from '../config.js';
import { keyFilePath, publicKeyPem } from '../keys/key-store.js';
import { signingKeyFromPem } from '../core/signing.js';
import { existsSync } from 'node:fs';

export const EXIT_VALID = 0;
export const EXIT_INVALID = 1;
export const EXIT_UNREADABLE = 2;
export const EXIT_UNAUTHENTICATED = 3;

function unreadable(message: string): never {
  process.stderr.write(`${message}\n`);
  process.exit(EXIT_UNREADABLE);
}

function readJson(file: string): unknown {
  let text: string;
  try {
    text = file === '-' ? readFileSync(0, 'utf8') : readFileSync(file, 'utf8');
  } catch (error) {
    unreadable(`Cannot read ${file}: ${(error as Error).message}`);
  }
  try {
    return JSON.parse(text);
  } catch (error) {
    unreadable(`${file} is not JSON: ${(error as Error).message}`);
  }
}

/** Public keys from --public-key files; else the local signing key's, when this machine has one. */
function publicKeysFor(files: string[]): { pems: string[]; source: string } {
  if (files.length > 0) {
    const pems = files.map((file) => {
      try {
        return readFileSync(file, 'utf8');
      } catch (error) {
        unreadable(`Cannot read public key ${file}: ${(error as Error).message}`);
      }
    });
    return { pems, source: files.join(', ') };
  }
  let path = 'the configured signing key';
  try {
    path = keyFilePath(loadConfig());
    if (existsSync(path)) return { pems: [publicKeyPem(signingKeyFromPem(readFileSync(path, 'utf8')))], source: path };
  } catch (error) {
    // Exit 1 would say the receipt is invalid; a local key that cannot be read says nothing about the receipt.
    unreadable(`Cannot use ${path} to check signatures: ${(error as Error).message}. Pass --public-key FILE instead.`);
  }
  return { pems: [], source: 'none' };
}

export function addReceiptCommands(program: Command): void {
  const receipt = program.command('receipt').description('verify and export signed receipts');

  receipt
    .command('verify')
    .description('verify a receipt offline; prints the verification as JSON (exit 0 valid, 1 invalid, 2 unreadable, 3 signatures not checked)')
    .argument('<file>', 'receipt JSON file, or - for standard input')
    .option('--public-key <file...>', 'PEM public key(s) to check signatures against (repeat for rotated keys)')
    .action((file: string, options: { publicKey?: string[] }) => {
      const input = readJson(file);
      const { pems, source } = publicKeysFor(options.publicKey ?? []);
      let keys;
      try {
        keys = pems.length > 0 ? publicKeySet(pems) : undefined;
      } catch (error) {
        unreadable(`Public key is unusable: ${(error as Error).message}`);
      }
      const result = verify(input, keys ? { publicKeys: keys } : {});
      process.stdout.write(`${JSON.stringify({ ...result, publicKeys: source }, null, 2)}\n`);
      if (result.signed === null) {
        process.stderr.write('No public key was given or configured, so the signatures were not checked: anyone could have rebuilt this chain. Pass --public-key FILE to authenticate it.\n');
      }
      process.exitCode = result.valid === true ? EXIT_VALID : result.valid === null ? EXIT_UNAUTHENTICATED : EXIT_INVALID;
    });

  receipt
    .command('export')
    .description('export an effect\'s receipt from Redis as JSON')
    .argument('<effectId>', '64-hex effect id')
    .option('--out <file>', 'write to a file instead of standard output')
    .action(async (effectId: string, options: { out?: string }) => {
      const { withStores } = await import('./stores.js');
      await withStores(async ({ journal }) => {
        const bundle = await journal.receipt(effectId);
        if (!bundle) {
          process.stderr.write(`No journal for effect ${effectId} under this REDIS_URL and INTERLOCK_KEY_PREFIX.\n`);
          process.exitCode = 1;
          return;
        }
        const text = `${JSON.stringify(bundle, null, 2)}\n`;
        if (options.out) writeFileSync(options.out, text);
        else process.stdout.write(text);
      });
    });
}
