// The receipt bundle: one effect's entries plus a signed head (entry count and last hash), so a tail cut after
// export is caught even though every remaining entry still verifies. Format v2 holds entries signed per batch
// (entries.ts); a v1 receipt, whose every entry is signed, still verifies.
import { canonicalJson } from './json.js';
import { signText, verifyText, type PublicKeySet, type SigningKey } from './signing.js';
import type { Entry } from './entries.js';

export const RECEIPT_FORMAT = 'interlock.receipt/v2';
export const RECEIPT_FORMATS = ['interlock.receipt/v1', 'interlock.receipt/v2'] as const;
export const HEAD_FORMAT = 'interlock.receipt-head/v1';

export type ReceiptHead = { format: typeof HEAD_FORMAT; effectId: string; count: number; lastHash: string | null; signedAt: number; kid: string; sig: string };
export type Receipt = { format: (typeof RECEIPT_FORMATS)[number]; effectId: string; entries: Entry[]; head: ReceiptHead };

function headText(head: Omit<ReceiptHead, 'sig'>): string {
  return canonicalJson({ format: head.format, effectId: head.effectId, count: head.count, lastHash: head.lastHash, signedAt: head.signedAt, kid: head.kid });
}

export function buildReceipt(effectId: string, entries: readonly Entry[], key: SigningKey, signedAt: number): Receipt {
  const unsigned = { format: HEAD_FORMAT, effectId, count: entries.length, lastHash: entries.at(-1)?.hash ?? null, signedAt, kid: key.kid } as const;
  const format = entries.every((entry) => entry.v === 1) ? 'interlock.receipt/v1' : RECEIPT_FORMAT;
  return { format, effectId, entries: [...entries], head: { ...unsigned, sig: signText(headText(unsigned), key) } };
}

export function headSignatureValid(head: ReceiptHead, keys: PublicKeySet): boolean | 'unknown-key' {
  const key = keys.get(head.kid);
  if (!key) return 'unknown-key';
  return verifyText(headText(head), head.sig, key);
}
