// Amounts as an operator reads them, in every alert, page and CLI line that states one. Stripe counts amounts in a
// currency's smallest unit: cents for usd and eur, but whole yen for jpy, whose amount 1000 is ¥1,000, not 10.00.

/** Stripe's zero-decimal currencies: an amount in one of these is already in whole units (Stripe's currencies docs). */
const ZERO_DECIMAL: ReadonlySet<string> = new Set(['bif', 'clp', 'djf', 'gnf', 'jpy', 'kmf', 'krw', 'mga', 'pyg', 'rwf', 'ugx', 'vnd', 'vuv', 'xaf', 'xof', 'xpf']);

/** Stripe's three-decimal currencies: an amount in one of these is in thousandths (5.124 KWD is 5124). */
const THREE_DECIMAL: ReadonlySet<string> = new Set(['bhd', 'jod', 'kwd', 'omr', 'tnd']);

/**
 * A currency code as Stripe writes it (three letters, lowercase) from a value that may be one in either case, or null
 * for anything else: a premise, a setting, an entry's or a lookup's `currency` that names no currency.
 */
export function currencyCode(value: unknown): string | null {
  return typeof value === 'string' && /^[a-z]{3}$/i.test(value) ? value.toLowerCase() : null;
}

/**
 * `amount` (in `currency`'s smallest unit, as Stripe counts it) as text: `$20.00` for usd, `20.00 EUR`, `1000 JPY`, `5.120 KWD`.
 * A negative amount (Stripe's sign for a balance credit) carries its minus in front: `-$5.00`, `-500 JPY`, never `$-5.00`.
 * `currency` null when nothing recorded says it (an effect proposed without its currency premise, alerts, items and
 * facts from before amounts carried one): `2000 (minor units, currency unknown)`. Never dollars: those records were
 * not all usd (refunds in their charge's currency, credits in INTERLOCK_CREDIT_CURRENCY were written as dollars all
 * the same), and a dollar sign on ¥5,000 states a hundred times the money. A code that is not three letters names no
 * currency; an amount that is not a finite number reads `an amount not known`. Exact for every safe integer (the
 * decimals are cut from its digits, never divided: `$90071992547409.85`, not a cent off); an amount that is no safe
 * integer (a receipt altered to `2000.4` or `1e+25`) is no sum of money and is quoted as its number, with why, never
 * rounded into another sum: `2000.4 (not a whole number of minor units of USD)`, `1e+25 (minor units of USD, too large
 * to state exactly)`.
 */
export function moneyText(amount: number, currency: string | null): string {
  if (!Number.isFinite(amount)) return 'an amount not known';
  if (amount < 0) return `-${moneyText(-amount, currency)}`;
  // Stripe's codes are three letters; anything else (an empty text) names no currency.
  const code = currencyCode(currency);
  const of = code === null ? ', currency unknown' : ` of ${code.toUpperCase()}`;
  if (!Number.isInteger(amount)) return `${String(amount)} (not a whole number of minor units${of})`;
  if (!Number.isSafeInteger(amount)) return `${String(amount)} (minor units${of}, too large to state exactly)`;
  if (code === null) return `${amount} (minor units, currency unknown)`;
  if (code === 'usd') return `$${inUnits(amount, 2)}`;
  if (ZERO_DECIMAL.has(code)) return `${amount} ${code.toUpperCase()}`;
  if (THREE_DECIMAL.has(code)) return `${inUnits(amount, 3)} ${code.toUpperCase()}`;
  return `${inUnits(amount, 2)} ${code.toUpperCase()}`;
}

/** A safe integer count of a currency's smallest unit in whole units with `decimals` decimals, by its digits: 5120 is `5.120` in three. */
function inUnits(amount: number, decimals: number): string {
  const digits = String(amount).padStart(decimals + 1, '0');
  return `${digits.slice(0, -decimals)}.${digits.slice(-decimals)}`;
}
