// Keys found on this machine (its signing key's, the retired ones of INTERLOCK_RETIRED_PUBLIC_KEYS_FILE) authenticate
// only what they signed. A receipt whose only failing signatures are by keys this machine does not hold (the service's,
// read on a laptop; one retired before the retired keys file named it) is not authenticated here, never forged; a part
// signed with a held key that does not verify is a forgery, whatever other keys the receipt names: an entry changed
// under the service's signature stays one when an attacker re-seals the rest with a key of their own. `receipt verify`
// and `effect show` both judge so.
import { headSignatureValid, type Receipt } from '../core/receipt.js';
import { parseReceipt } from '../core/receipt-schema.js';
import type { PublicKeySet } from '../core/signing.js';
import { entrySignatures, type Verification } from '../core/verify.js';
import { shownKid } from './output.js';

/**
 * The key ids of the signed parts of `receipt` (its entries' and its head's) that do not verify with `found` only
 * because `found` has no such key; null when some part fails otherwise: signed with a key `found` holds and not
 * verifying, or naming no key. Entries a signed entry covers are judged through that entry.
 */
function unheldSigners(receipt: Receipt, found: PublicKeySet): string[] | null {
  const kids = new Set<string>();
  const parts = entrySignatures(receipt, found);
  for (const [index, part] of parts.entries()) {
    if (receipt.entries[index]?.sig === null || part.status === 'signed') continue;
    if (part.status !== 'unknown_key' || part.kid === null || part.kid === '') return null;
    kids.add(shownKid(part.kid));
  }
  const head = headSignatureValid(receipt.head, found);
  if (head === 'unknown-key' && receipt.head.kid !== '') kids.add(shownKid(receipt.head.kid));
  else if (head !== true) return null;
  return [...kids];
}

/**
 * The keys this machine does not hold whose signatures are all that makes `held` (the verification of the receipt
 * `input` with the keys `found`) invalid: when there are some, the receipt is not authenticated here, and its verdict
 * is the one verify() gives with no key (valid null unless its chain or rules are broken), saying which keys. Empty
 * when `held` stands: valid or not authenticated already, or invalid for anything else (a part a held key signed that
 * does not verify, an entry signed with no kid, a receipt of no receipt's shape).
 */
export function signersNotHeld(held: Verification, input: unknown, found: PublicKeySet): string[] {
  if (held.valid !== false) return [];
  const shaped = parseReceipt(input);
  if (!shaped.ok) return [];
  try {
    return unheldSigners(shaped.receipt, found) ?? [];
  } catch {
    // What no signature check foresaw in a hostile receipt: the held keys' answer (invalid) stands.
    return [];
  }
}
