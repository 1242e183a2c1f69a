// The currency an effect's money is in, from what its chain records, for every alert and inbox item that states an
// amount (moneyText). Stripe counts amounts in a currency's smallest unit, so an amount without its currency is not
// money a person can read: 5000 is $50.00 in usd and ¥5,000 in jpy.
import { effectFactsOrNull } from './effects.js';
import type { Entry } from './entries.js';
import { isJsonObject, type Json } from './json.js';
import { currencyCode } from './money-text.js';

/**
 * The currency of a landed object as a target's lookup or send answered it (a COMMITTED or LATE_RESULT `result`: Stripe's
 * refund and balance credit summaries name theirs), or null when it names none.
 */
function landedCurrency(result: Json | undefined): string | null {
  return isJsonObject(result) ? currencyCode(result.currency) : null;
}

/** The `currency` premise (src/stripe: the refund's PaymentIntent's, the credit target's own) of a proposal's premises, or null. */
function currencyOfPremises(premises: Json | undefined): string | null {
  return isJsonObject(premises) ? currencyCode(premises.currency) : null;
}

/**
 * The currency of the effect's money (lowercase ISO code), or null when its chain does not say it. Stripe's own word
 * first: the landed object (a COMMITTED result, a late landing's), whose summary names its currency (src/stripe
 * summaries.ts), or a fact the facts recorded about that object with its currency (a balance credit's; a late landing
 * the facts noticed may carry none in its result). Then the `currency` premise, newest first. A refund's: as a premise
 * check read it when it changed (a proposal that declared another currency than its payment's is refused on it, and the
 * read is the payment's true currency), else as decided on. A credit's: as decided on, always: its premise is the
 * currency the credit target gives credits in (INTERLOCK_CREDIT_CURRENCY), so a change read by a worker set to another
 * says what that worker would have sent, not what was decided and approved: 5000 decided in usd is $50.00, refused, not
 * ¥5,000. A payment's currency never changes, so the premise says the currency of money that never moved too (a
 * refusal, an AMBIGUOUS send). Chains recorded before the premise existed carry none, and an effect proposed without it
 * neither: null, which moneyText writes as a currency unknown, never as dollars (currencyOfEffectOrCredit fills in a
 * credit's).
 */
export function currencyOfEffect(entries: readonly Entry[]): string | null {
  const made = new Set<string>();
  for (let index = entries.length - 1; index >= 0; index -= 1) {
    const entry = entries[index];
    if (entry?.kind !== 'COMMITTED' && !(entry?.kind === 'LATE_RESULT' && entry.outcome === 'landed')) continue;
    const code = landedCurrency(entry.result);
    if (code !== null) return code;
    const id = isJsonObject(entry.result) ? entry.result.id : undefined;
    if (typeof id === 'string') made.add(id);
  }
  for (let index = entries.length - 1; index >= 0 && made.size > 0; index -= 1) {
    const entry = entries[index];
    const code = entry?.kind === 'OBSERVED' && made.has(entry.objectId) ? currencyCode(entry.currency ?? undefined) : null;
    if (code !== null) return code;
  }
  const credit = kindOf(entries) === 'credit';
  for (let index = entries.length - 1; index >= 0; index -= 1) {
    const entry = entries[index];
    if (entry === undefined) continue;
    const read = credit ? undefined : changesOf(entry).find((change) => change.field === 'currency');
    const code = read === undefined ? null : currencyCode(read.now);
    if (code !== null) return code;
    if (entry.kind === 'PROPOSED' || entry.kind === 'DISPATCHED') {
      const decided = currencyOfPremises(entry.premises);
      if (decided !== null) return decided;
    }
  }
  return null;
}

/**
 * The currency an alert or inbox item states the effect's money in: its chain's (currencyOfEffect), or, for a credit
 * whose chain says none (proposed without its currency premise, as callers did before it existed), `creditCurrency`,
 * the one credits are given in (INTERLOCK_CREDIT_CURRENCY), since such a credit goes out in it. A refund's currency is
 * its payment's, which only the premise or Stripe's answer records: without them, null (a currency unknown). One
 * helper, so every item and alert about one effect states its money alike.
 */
export function currencyOfEffectOrCredit(entries: readonly Entry[], creditCurrency: string | null): string | null {
  return currencyOfEffect(entries) ?? (kindOf(entries) === 'credit' ? currencyCode(creditCurrency ?? undefined) : null);
}

/** The kind of the effect the chain's first proposal records, or null when it records none a reader can parse. */
function kindOf(entries: readonly Entry[]): string | null {
  const proposed = entries.find((entry) => entry.kind === 'PROPOSED');
  return proposed?.kind === 'PROPOSED' ? (effectFactsOrNull(proposed.effect)?.kind ?? null) : null;
}

/**
 * The premise changes an entry records (a refusal's, and those of the checks it carries), read defensively: a chain
 * whose entries are not as the gate writes them (a receipt from elsewhere) never makes it throw.
 */
function changesOf(entry: Entry): { field: unknown; now: Json }[] {
  let lists: unknown[] = [];
  if (entry.kind === 'REFUSED') lists = [entry.changes, entry.checks?.changes, entry.rechecked?.changes];
  else if (entry.kind === 'DISPATCHED') lists = [entry.checks?.changes];
  else if (entry.kind === 'COMMITTED' || entry.kind === 'AMBIGUOUS') lists = [entry.rechecked?.changes];
  return lists.flatMap((list) => (Array.isArray(list) ? (list as unknown[]).filter((change) => isJsonObject(change as Json)) : [])) as { field: unknown; now: Json }[];
}
