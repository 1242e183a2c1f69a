// The receipt bundle: one effect's entries plus a signed head (entry count and last hash), so a tail cut after
// export is caught even though every remaining entry still verifies. Format v3 holds entries sealed per tree of
// batches (seal.ts), v2 entries signed per batch, v1 entries each signed; all three still verify. A v2 head is
// sealed like an entry: receipts exported together (buildReceipts) share one signature, each with its own path.
import { canonicalJson, PLAIN_STRING } from './json.js';
import { sealLeaves, verifySeal } from './seal.js';
import { signText, verifyText, type PublicKeySet, type SigningKey } from './signing.js';
import type { Entry } from './entries.js';

export const RECEIPT_FORMAT = 'interlock.receipt/v3';
export const RECEIPT_FORMATS = ['interlock.receipt/v1', 'interlock.receipt/v2', 'interlock.receipt/v3'] as const;
export const HEAD_FORMAT = 'interlock.receipt-head/v2';
export const HEAD_FORMATS = ['interlock.receipt-head/v1', 'interlock.receipt-head/v2'] as const;

export type ReceiptHead = { format: (typeof HEAD_FORMATS)[number]; effectId: string; count: number; lastHash: string | null; signedAt: number; kid: string; sig: string };
export type Receipt = { format: (typeof RECEIPT_FORMATS)[number]; effectId: string; entries: Entry[]; head: ReceiptHead };

/** The text a head's signature (v1) or seal (v2) covers. */
export function headText(head: Omit<ReceiptHead, 'sig'>): string {
  const { format, effectId, count, lastHash, signedAt, kid } = head;
  // The canonical JSON written straight out (keys in order, strings that need no escape, finite numbers): verify()
  // writes one per receipt. Anything else takes canonicalJson's road, which writes the same text or refuses the value.
  if (Number.isFinite(count) && Number.isFinite(signedAt) && plain(format) && plain(effectId) && plain(kid) && (lastHash === null || plain(lastHash))) {
    return `{"count":${count},"effectId":"${effectId}","format":"${format}","kid":"${kid}","lastHash":${lastHash === null ? 'null' : `"${lastHash}"`},"signedAt":${signedAt}}`;
  }
  return canonicalJson({ format, effectId, count, lastHash, signedAt, kid });
}

/** A string canonical JSON writes as it is between quotes (PLAIN_STRING). */
function plain(value: unknown): value is string {
  return typeof value === 'string' && PLAIN_STRING.test(value);
}

/**
 * The format that names how the entries are signed: v1 when every one is, v3 when any is sealed, else v2. The
 * receipt's `format` is not signed, so verify() checks it against this.
 */
export function formatOf(entries: readonly Entry[]): Receipt['format'] {
  if (entries.every((entry) => entry.v === 1)) return 'interlock.receipt/v1';
  return entries.some((entry) => entry.v === 3) ? 'interlock.receipt/v3' : 'interlock.receipt/v2';
}

/** Heads one signature covers in an export of many receipts: a path of six sibling hashes (about 260 bytes) each. */
export const HEADS_PER_SEAL = 64;

/** Receipts of several effects, exported together: their heads are sealed HEADS_PER_SEAL to a signature. */
export function buildReceipts(chains: readonly { effectId: string; entries: readonly Entry[] }[], key: SigningKey, signedAt: number): Receipt[] {
  const unsigned = chains.map(({ effectId, entries }) => ({ format: HEAD_FORMAT, effectId, count: entries.length, lastHash: entries.at(-1)?.hash ?? null, signedAt, kid: key.kid }) as const);
  const seals: string[] = [];
  for (let at = 0; at < unsigned.length; at += HEADS_PER_SEAL) {
    seals.push(...sealLeaves(unsigned.slice(at, at + HEADS_PER_SEAL).map(headText), 'heads', (message) => signText(message, key)));
  }
  return chains.map(({ effectId, entries }, index) => ({ format: formatOf(entries), effectId, entries: [...entries], head: { ...(unsigned[index] as (typeof unsigned)[number]), sig: seals[index] as string } }));
}

export function buildReceipt(effectId: string, entries: readonly Entry[], key: SigningKey, signedAt: number): Receipt {
  return buildReceipts([{ effectId, entries }], key, signedAt)[0] as Receipt;
}

/**
 * A chain as a receipt before anyone signs its head: what the service hands verify() to judge a chain it holds (the
 * rules, the outcome, the final money). Its head carries no signature, so no key can make it `valid: true`; verify()
 * given no key says `valid: null` at best, and the entries' own signatures are checked only when a key is given.
 */
export function unsignedReceipt(effectId: string, entries: readonly Entry[]): Receipt {
  return { format: formatOf(entries), effectId, entries: [...entries], head: { format: HEAD_FORMAT, effectId, count: entries.length, lastHash: entries.at(-1)?.hash ?? null, signedAt: 0, kid: '', sig: '' } };
}

export function headSignatureValid(head: ReceiptHead, keys: PublicKeySet): boolean | 'unknown-key' {
  const key = keys.get(head.kid);
  if (!key) return 'unknown-key';
  return head.format === 'interlock.receipt-head/v1' ? verifyText(headText(head), head.sig, key) : verifySeal(headText(head), head.sig, 'heads', key);
}
