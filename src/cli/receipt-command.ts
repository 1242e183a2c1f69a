// `interlock receipt verify|export`. Exit codes for verify: 0 valid, 1 invalid, 2 unreadable input, 3 nothing wrong
// but nothing authenticated either (no public key checked the signatures).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Command } from 'commander';
import { publicKeySet, type PublicKeySet } from '../core/signing.js';
import { parseReceiptText, verifyReceiptText } from '../core/receipt-text.js';
import type { Verification } from '../core/verify.js';
import type { Receipt } from '../core/receipt.js';
import { loadConfig } from '../config.js';
import { keyFileExposure, keyFilePath, publicKeyPem, readKeyFile, retiredKeysFileExposure, shownKeyPath, verifyingKeys } from '../keys/key-store.js';
import { signingKeyFromPem } from '../core/signing.js';
import { existsSync } from 'node:fs';
import { readReceiptText, reportOf, whyReceiptUnreadable, whyUnreadable, type FileReport } from './verify-pool.js';
import { printJson, printLine, printProblem } from './output.js';
import { signersNotHeld } from './held-keys.js';
import { showable } from '../core/text.js';
import { CliFailure, EXIT_BAD_INPUT, EXIT_FAILED, wholeNumber } from './failure.js';
import { makeDirectory } from '../files.js';
import { serviceNamed, serviceSigningKey, withServiceRetiredKeys } from './stores.js';
import { placingInDir, placingOut, receiptPathIn, writeReceiptFile, writeReceiptFiles } from './export-files.js';

/**
 * The file of the signing key `kid` a command signs with, as withStores chose it: its own (INTERLOCK_SIGNING_KEY_FILE,
 * or the data directory's) when that holds the key, else the key file of the service that wrote `serviceFile` (taken
 * instead: a rotation moved the service off the data directory's key); null when neither holds it.
 */
function signingKeyFile(config: { dataDir: string; signingKeyFile: string | null }, kid: string, serviceFile: string): { file: string; fromService: boolean } | null {
  const holds = (file: string) => {
    try {
      return signingKeyFromPem(readKeyFile(file)).kid === kid;
    } catch {
      return false;
    }
  };
  const own = keyFilePath(config);
  if (existsSync(own) && holds(own)) return { file: own, fromService: false };
  let named: unknown;
  try {
    named = (JSON.parse(readFileSync(serviceFile, 'utf8')) as { signing_key_file?: unknown }).signing_key_file;
  } catch {
    return null;
  }
  return typeof named === 'string' && holds(named) ? { file: named, fromService: true } : null;
}

export const EXIT_VALID = 0;
export const EXIT_INVALID = 1;
export const EXIT_UNREADABLE = 2;
export const EXIT_UNAUTHENTICATED = 3;

/**
 * Ends the command with exit 2 and why. The message may quote a file's name or its text (the JSON parser's words
 * quote the text around a bad token), so it is written escaped, on its one line: a hostile file must not drive the
 * terminal.
 */
function unreadable(message: string): never {
  printProblem(message);
  process.exit(EXIT_UNREADABLE);
}

function readText(file: string): string {
  try {
    return readReceiptText(file);
  } catch (error) {
    unreadable(`Cannot read ${file}: ${whyReceiptUnreadable(file, error)}.`);
  }
}

/** Whether one PEM text (a file's) reads as public keys. */
function usablePem(pem: string): boolean {
  try {
    publicKeySet([pem]);
    return true;
  } catch {
    return false;
  }
}

/**
 * Public keys from --public-key files (`given`); else the local signing key's, when this machine has one, with the
 * keys it retired (INTERLOCK_RETIRED_PUBLIC_KEYS_FILE), as the service itself verifies; the retired ones alone without
 * it. Beside a service found through service.json (running or stopped), the key it signs with and its retired keys
 * (unless INTERLOCK_RETIRED_PUBLIC_KEYS_FILE is set), as `effect show` and `receipt export` beside it take them: a
 * data directory's key that is not the service's (a rotation's old key) authenticates none of its receipts.
 */
function publicKeysFor(files: string[]): { pems: string[]; source: string; given: boolean } {
  if (files.length > 0) {
    const pems = files.map((file) => {
      if (file === '') unreadable('--public-key is empty: give the path of a PEM public key file (`npx interlock keys public` prints it where the service runs), or leave --public-key out for this machine\'s keys.');
      let pem: string;
      try {
        pem = readKeyFile(file);
      } catch (error) {
        unreadable(`Cannot read public key ${file}: ${whyUnreadable(error)}.`);
      }
      // A private key verifies through its public half, but whoever holds it can sign receipts: say so, once per file.
      if (/-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----/.test(pem)) {
        printProblem(`${file} holds a private key: only its public half is used. Whoever holds that file can sign receipts, so a verifier should have only the public key: \`npx interlock keys public --key ${file}\` prints it.`);
      }
      return pem;
    });
    return { pems, source: files.join(', '), given: true };
  }
  let path = 'the configured signing key';
  try {
    const config = withServiceRetiredKeys(loadConfig());
    path = keyFilePath(config);
    const service = serviceSigningKey(config);
    const theirs = service !== null && 'key' in service ? service : null;
    if (service !== null && 'why' in service) {
      printProblem(`Receipts ${serviceNamed(service.service)} signed with key ${service.service.kid} are not authenticated here without --public-key FILE: ${service.why}.`);
    }
    if (theirs !== null && !theirs.own) {
      // Said only of a key named for this command, as commands beside the service say it (stores.ts keyOf).
      if (config.signingKeyFile !== null) printProblem(`INTERLOCK_SIGNING_KEY_FILE (${shownKeyPath(path)}) is not the key of ${serviceNamed(theirs.service)}, ${theirs.service.kid}: its key file ${theirs.keyFile} is used instead.`);
      path = theirs.keyFile;
    }
    const local = existsSync(path);
    // A key was named (a typo, a volume not mounted): "no key given or configured" and exit 3 would hide that.
    if (!local && config.signingKeyFile !== null) unreadable(`INTERLOCK_SIGNING_KEY_FILE points at ${shownKeyPath(path)}, which does not exist, so no signature could be checked. Correct it, or pass --public-key FILE.`);
    const current = theirs !== null ? theirs.key : local ? signingKeyFromPem(readKeyFile(path)) : null;
    const exposure = local ? keyFileExposure(path) : null;
    if (exposure !== null) printProblem(exposure.message);
    // Retired keys are used without a local signing key too (a machine that only verifies): a configured file is
    // never passed over, or a receipt they sign would be called unauthenticated and a missing file go unsaid.
    const sources = [...(local ? [path] : []), ...(config.retiredPublicKeysFile === null ? [] : [config.retiredPublicKeysFile])];
    if (sources.length === 0) return { pems: [], source: 'none', given: false };
    // As messages show key paths: a key put where its path goes is not printed (shownKeyPath).
    path = sources.map(shownKeyPath).join(', ');
    const keys = verifyingKeys(current, config.retiredPublicKeysFile);
    const retiredExposure = config.retiredPublicKeysFile === null ? null : retiredKeysFileExposure(config.retiredPublicKeysFile);
    if (retiredExposure !== null) printProblem(retiredExposure.message);
    return { pems: [...keys.values()].map((publicKey) => publicKeyPem({ publicKey })), source: path, given: false };
  } catch (error) {
    // Exit 1 would say the receipt is invalid; a local key that cannot be read says nothing about the receipt.
    unreadable(`Cannot use ${path} to check signatures: ${(error as Error).message.replace(/\.$/, '')}. Pass --public-key FILE instead.`);
  }
}

/**
 * Why a receipt with parts signed by `kids`, none of which is a key this machine holds, was not authenticated here,
 * and what to pass. A key found on this machine (the data directory's, a retired one) was not given for this receipt:
 * it says nothing of a part another key signed, which is what the service's genuine receipts are from here.
 */
function unheldSignersNote(kids: readonly string[], source: string): string {
  return `signatures: the receipt is signed with key ${kids.join(', ')}, which is none of the keys this machine holds (${source}), so those signatures were not authenticated here (every one by a key it holds verified). Pass the signer's public key with --public-key FILE (\`npx interlock keys public\` where the service runs prints it) to authenticate it.`;
}

/** A receipt's text read and verified, with the keys (`notHeld`) that signed parts of it and that this machine does not hold. */
type JudgedText = { json: true; verification: Verification; notHeld: string[] } | { json: false; error: string };

function withNoneUnheld(read: ReturnType<typeof verifyReceiptText>): JudgedText {
  return read.json ? { ...read, notHeld: [] } : read;
}

/**
 * A receipt's text verified with keys found on this machine (`found`, not given), which authenticate only what they
 * signed (held-keys.ts): a receipt they call invalid only because parts of it are signed by keys they do not hold (the
 * service's, read on a laptop whose data directory holds a key of its own; one retired before
 * INTERLOCK_RETIRED_PUBLIC_KEYS_FILE named it) is verified again without keys: not authenticated (valid null, exit 3)
 * unless its chain or rules are broken, and never called a forgery, as \`effect show\` says of it; `notHeld` names
 * those keys. A part signed with a key `found` holds is checked with it whatever other keys the receipt names.
 */
function judgedOnHeldKeys(text: string, found: PublicKeySet, source: string): JudgedText {
  // Read as text and verified as text (core/receipt-text.ts): a member named twice is caught only there.
  const held = verifyReceiptText(text, { publicKeys: found });
  if (!held.json || held.verification.valid !== false) return withNoneUnheld(held);
  const parsed = parseReceiptText(text);
  const notHeld = parsed.json ? signersNotHeld(held.verification, parsed.input, found) : [];
  if (notHeld.length === 0) return { ...held, notHeld: [] };
  const bare = verifyReceiptText(text, {});
  if (!bare.json) return { ...held, notHeld: [] };
  return { json: true, verification: { ...bare.verification, unchecked: [unheldSignersNote(notHeld, source)] }, notHeld };
}

/** The most verifying threads `receipt verify --threads` starts (verification is CPU work: more than the cores gain nothing). */
const MAX_VERIFY_THREADS = 256;

/** A file's report, its text judged on the keys found on this machine (judgedOnHeldKeys); its unheld keys go into `unheld`. */
function reportOnHeldKeys(file: string, text: string, found: { keys: PublicKeySet; source: string }, unheld: Set<string>): FileReport {
  const judged = judgedOnHeldKeys(text, found.keys, found.source);
  if (!judged.json) return reportOf({ file, readable: false, verification: null, error: `cannot read ${file} as JSON: ${judged.error}` });
  for (const kid of judged.notHeld) unheld.add(kid);
  return reportOf({ file, readable: true, verification: judged.verification, error: null });
}

/** Standard input's report among several files, judged as a file is (reportOnHeldKeys). */
function standardInputOnHeldKeys(found: { keys: PublicKeySet; source: string }, unheld: Set<string>): FileReport {
  let text: string;
  try {
    text = readReceiptText('-');
  } catch (error) {
    return reportOf({ file: '-', readable: false, verification: null, error: `cannot read -: ${whyReceiptUnreadable('-', error)}` });
  }
  return reportOnHeldKeys('-', text, found, unheld);
}

/** A file the pool called invalid with the keys found on this machine, read again and judged so; unreadable now, the pool's verdict stands. */
function rejudged(verified: FileReport, found: { keys: PublicKeySet; source: string }, unheld: Set<string>): FileReport {
  const { file } = JSON.parse(verified.line) as { file?: unknown };
  if (typeof file !== 'string') return verified;
  let text: string;
  try {
    text = readReceiptText(file);
  } catch {
    return verified;
  }
  return reportOnHeldKeys(file, text, found, unheld);
}

/**
 * Several receipts: one JSON line per file as each is verified, then one exit code for them all: 1 when any receipt
 * is invalid, else 2 when any file is unreadable, else 3 when any is not authenticated, else 0. `found`: the
 * keys were found on this machine, not given, and authenticate only what they signed (as for one file): a receipt the
 * pool calls invalid with them is read again and judged so. Standard input cannot be read again, so it is read and
 * judged here, before the files go to the pool.
 */
async function verifyEach(files: string[], pems: string[], threads: number | undefined, found: { keys: PublicKeySet; source: string } | null): Promise<number> {
  const { verifyMany } = await import('./verify-pool.js');
  const counts = { valid: 0, invalid: 0, unauthenticated: 0, unreadable: 0 };
  const unheld = new Set<string>();
  const print = (report: FileReport) => {
    counts[report.status] += 1;
    printLine(report.line);
  };
  const rest = found === null ? files : files.filter((file) => file !== '-');
  if (found !== null && rest.length < files.length) print(standardInputOnHeldKeys(found, unheld));
  await verifyMany(rest, pems, (verified) => print(found !== null && verified.status === 'invalid' ? rejudged(verified, found, unheld) : verified), threads);
  if (found !== null && unheld.size > 0) {
    process.stderr.write(`Some receipts are signed with key ${[...unheld].join(', ')}, which this machine does not hold (${found.source}), so those signatures were not checked. Pass that key's public half with --public-key FILE to authenticate them.\n`);
  }
  process.stderr.write(`${files.length} receipts: ${counts.valid} valid, ${counts.invalid} invalid, ${counts.unauthenticated} not authenticated, ${counts.unreadable} unreadable\n`);
  // A forgery is never masked by an input problem: any invalid receipt exits 1, before any unreadable file's 2.
  if (counts.invalid > 0) return EXIT_INVALID;
  if (counts.unreadable > 0) return EXIT_UNREADABLE;
  if (counts.unauthenticated > 0) return EXIT_UNAUTHENTICATED;
  return EXIT_VALID;
}

export function addReceiptCommands(program: Command): void {
  const receipt = program.command('receipt').description('verify and export signed receipts');

  receipt
    .command('verify')
    .description('verify receipts offline; one file prints its verification as JSON, several print one JSON line each, verified on every core (exit 0 valid, 1 invalid, 2 unreadable, 3 signatures not checked)')
    .argument('<files...>', 'receipt JSON files, or - for standard input')
    // One file per --public-key, repeated for rotated keys: a list option would also take the receipt files after it.
    .option('--public-key <file>', 'PEM public key to check signatures against (repeat for rotated keys)', (value: string, previous: string[] = []) => [...previous, value])
    // Read as digits only, and before any file is looked at: a --threads that says nothing an operator meant (1e3,
    // 0x2, banana) is refused even where one file needs no threads, as it is with several. At most MAX_VERIFY_THREADS:
    // each thread loads its own verifier (tens of MB), so `--threads 100000` over many files would exhaust memory
    // long before it verified anything faster than one thread per core.
    .option('--threads <n>', `verifying threads for several files, 1 to ${MAX_VERIFY_THREADS} (default: one per core)`, wholeNumber('--threads', 'threads', { min: 1, max: MAX_VERIFY_THREADS }))
    .action(async (files: string[], options: { publicKey?: string[]; threads?: number }) => {
      const { pems, source, given } = publicKeysFor(options.publicKey ?? []);
      let keys;
      try {
        keys = pems.length > 0 ? publicKeySet(pems) : undefined;
      } catch (error) {
        // Name the file at fault: of several --public-key files, the first that is unusable alone.
        const given = options.publicKey ?? [];
        const culprit = given.length > 1 ? given.find((_file, index) => !usablePem(pems[index] ?? '')) : undefined;
        unreadable(`Public key ${culprit ?? source} is unusable: ${(error as Error).message}`);
      }
      if (files.length > 1) {
        if (files.filter((file) => file === '-').length > 1) unreadable('Standard input (-) can be given once: it is read once.');
        process.exitCode = await verifyEach(files, pems, options.threads, keys === undefined || given ? null : { keys, source });
        if (keys === undefined) process.stderr.write('No public key was given or configured, so no signature was checked. Pass --public-key FILE to authenticate the receipts.\n');
        return;
      }
      const file = files[0] ?? '-';
      const text = readText(file);
      // Keys found on this machine, not given for this receipt, authenticate only what they signed (judgedOnHeldKeys).
      // Read as text and verified as text (core/receipt-text.ts): a member named twice is caught only there.
      const read = keys === undefined || given ? withNoneUnheld(verifyReceiptText(text, keys ? { publicKeys: keys } : {})) : judgedOnHeldKeys(text, keys, source);
      if (!read.json) unreadable(`${file} is not JSON: ${read.error}`);
      const { verification: result, notHeld } = read;
      let written: string;
      try {
        written = JSON.stringify({ ...result, publicKeys: source }, null, 2);
      } catch (error) {
        unreadable(`${file}: its verification could not be written out (${error instanceof Error ? error.message : String(error)}).`);
      }
      process.stdout.write(`${showable(written)}\n`);
      // Only when no key was given: a receipt refused on its shape is never signature-checked either (signed null), and
      // telling that operator to pass the key they passed is untrue.
      if (keys === undefined) {
        process.stderr.write('No public key was given or configured, so the signatures were not checked: anyone could have rebuilt this chain. Pass --public-key FILE to authenticate it.\n');
      } else if (notHeld.length > 0) {
        process.stderr.write(`The receipt is signed with key ${notHeld.join(', ')}, which this machine does not hold (${source}), so the signatures by it were not checked: anyone could have rebuilt this chain. Pass that key's public half with --public-key FILE to authenticate it.\n`);
      }
      process.exitCode = result.valid === true ? EXIT_VALID : result.valid === null ? EXIT_UNAUTHENTICATED : EXIT_INVALID;
    });

  receipt
    .command('export')
    .description('export receipts from Redis as JSON: one to standard output (or --out FILE); several as one JSON line each, or as DIR/EFFECT_ID.json with --dir. Receipts exported together share their head signatures (exit 0 all found, 1 some not found or, with --dir, written in part, 2 bad input)')
    .argument('<effectIds...>', '64-hex effect ids')
    .option('--out <file>', 'write the one receipt to a new file instead of standard output')
    .option('--dir <dir>', 'write each receipt to DIR/EFFECT_ID.json, replacing an earlier export of the same receipt there')
    .option('--force', 'replace a file already at --out, or one in --dir that is not an earlier export of the same receipt')
    .action(async (effectIds: string[], options: { out?: string; dir?: string; force?: boolean }) => {
      if (options.out === '') unreadable('--out is empty: give the path of a new file to write the receipt to, or leave --out out to print it.');
      if (options.dir === '') unreadable('--dir is empty: give the directory to write the receipts to (. for this one).');
      const malformed = effectIds.filter((effectId) => !/^[0-9a-f]{64}$/.test(effectId));
      if (malformed.length > 0) unreadable(`Not an effect id (64 lowercase hex characters): ${malformed.slice(0, 3).join(', ')}${malformed.length > 3 ? ', …' : ''}`);
      if (options.out !== undefined && effectIds.length > 1) unreadable('--out takes one receipt; for several, give --dir DIR (one file each) or none (one JSON line each)');
      if (options.out !== undefined && options.dir !== undefined) unreadable('Give --out FILE (one receipt) or --dir DIR (one file each), not both.');
      // Checked before Redis is read, so a refused export has done nothing; the write checks again as it puts each file in place.
      const force = options.force === true;
      const outPlacing = options.out === undefined ? null : placingOut(options.out, force);
      const dirPlacing = options.dir === undefined ? null : placingInDir(options.dir, effectIds, force);
      const { SERVICE_FILE, unknownSigners, whereLooked, withStores } = await import('./stores.js');
      await withStores(async (cli) => {
        const { journal, keyed, config } = cli;
        // An exported receipt's head is signed here, as the service signs it: with a key made for this command it
        // would verify with no key the service's auditors hold, and read as a forgery to all of them.
        if (!keyed) {
          throw new CliFailure(`receipt export signs each receipt's head with the service's signing key, and this machine has none (no ${keyFilePath(config)}, no INTERLOCK_SIGNING_KEY_FILE); nothing was exported. Run it where the service runs, or set INTERLOCK_SIGNING_KEY_FILE to the service's key. To read an effect here, \`interlock effect show\` needs no key.`, EXIT_BAD_INPUT);
        }
        const bundles = await journal.receipts(effectIds);
        // So would a key of this machine's that did not sign the entries (a data directory where `npm start` once
        // ran, reading the service's Redis): every head it signed would read as a forgery to the service's auditors.
        const unknown = unknownSigners(cli, bundles);
        if (unknown.length > 0) {
          const kid = cli.stores.signingKey.kid;
          const serviceFile = join(config.dataDir, SERVICE_FILE);
          const used = signingKeyFile(config, kid, serviceFile);
          const retired = `set INTERLOCK_RETIRED_PUBLIC_KEYS_FILE to the file of its retired public keys, which holds ${unknown.join(', ')}${config.retiredPublicKeysFile === null ? '' : ` (${config.retiredPublicKeysFile} does not)`}`;
          // A key taken from service.json is the service's, so only its retired keys can be missing here; this
          // machine's own may not be the service's at all (a stale data directory reading the service's Redis).
          const advice = used?.fromService === true
            ? `It is the key of the service that wrote ${serviceFile}: if that key was rotated since those entries were signed, ${retired}.`
            : `If ${used?.file ?? 'that key'} is the service's key (a rotation since those entries were signed), ${retired}; if it is not, set INTERLOCK_SIGNING_KEY_FILE to the service's key, or run this where the service runs.`;
          throw new CliFailure(`receipt export signs each receipt's head with the signing key ${kid}${used === null ? '' : ` (${used.file})`}, but the journal's entries are signed with key ${unknown.join(', ')}, which is neither that key nor one of its retired public keys${config.retiredPublicKeysFile === null ? '' : ` (${config.retiredPublicKeysFile})`}: the heads would not verify with the service's public key, so nothing was exported. ${advice}`, EXIT_BAD_INPUT);
        }
        // Made only once the export is going to write: a refused one leaves nothing behind.
        if (options.dir !== undefined) makeDirectory(options.dir);
        const missing = effectIds.filter((_, index) => !bundles[index]);
        const sayMissing = () => {
          for (const effectId of missing) printProblem(`No journal for effect ${effectId} ${whereLooked(config)}.`);
        };
        const text = (bundle: Receipt) => `${JSON.stringify(bundle, null, 2)}\n`;
        if (options.dir !== undefined) {
          const dir = options.dir;
          const files = bundles.flatMap((bundle, index) => {
            if (!bundle) return [];
            const path = receiptPathIn(dir, effectIds[index] ?? bundle.effectId);
            return [{ path, placing: dirPlacing?.get(path) ?? 'new', text: text(bundle) }];
          });
          // A write that fails (a disk that fills half way) ends the command with the line saying what stands, after
          // the effects that had no journal.
          try {
            writeReceiptFiles(dir, files);
          } catch (error) {
            sayMissing();
            throw error;
          }
          printProblem(`${files.length} receipt${files.length === 1 ? '' : 's'} written to ${dir}`);
        } else {
          for (const bundle of bundles) {
            if (!bundle) continue;
            if (options.out !== undefined) writeReceiptFile(options.out, text(bundle), outPlacing ?? 'new');
            else printJson(bundle, { compact: effectIds.length > 1 });
          }
          if (options.out !== undefined && missing.length === 0) printProblem(`receipt written to ${options.out}`);
        }
        sayMissing();
        if (missing.length > 0) process.exitCode = EXIT_FAILED;
      }, { readOnly: true });
    });
}
