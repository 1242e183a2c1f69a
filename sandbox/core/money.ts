import { invalidRequest } from './errors.js';
import type { SandboxError } from './errors.js';

// Amounts as Stripe writes them in messages: `$40.00`, `€12.50`, `¥500`.
const symbols: Readonly<Record<string, string>> = { usd: '$', eur: '€', gbp: '£', jpy: '¥', cad: 'CA$', aud: 'A$' };
const zeroDecimal = new Set(['bif', 'clp', 'djf', 'gnf', 'jpy', 'kmf', 'krw', 'mga', 'pyg', 'rwf', 'ugx', 'vnd', 'vuv', 'xaf', 'xof', 'xpf']);

export function formatAmount(amount: number, currency: string): string {
  const code = currency.toLowerCase();
  const symbol = symbols[code] ?? `${code.toUpperCase()} `;
  const digits = zeroDecimal.has(code) ? String(amount) : (amount / 100).toFixed(2);
  return `${symbol}${digits}`;
}

/**
 * The largest amount Stripe charges in any currency: eight digits in the smallest unit (OpenAPI POST
 * /v1/payment_intents `amount`: "supports up to eight digits (e.g., a value of 99999999 for a USD charge of
 * $999,999.99)").
 */
export const MAX_CHARGE_AMOUNT = 99_999_999;

/**
 * The smallest amount Stripe charges, in the charge currency's smallest unit. The OpenAPI text says "$0.50 US or
 * equivalent in charge currency", and Stripe's currencies page has a per-currency table the references here do not
 * carry, so this assumes 50 of the smallest unit in every currency: $0.50, €0.50, £0.50, ¥50 (jpy and the other
 * zero-decimal currencies: 50 whole units). Stripe's own figure differs for some (e.g. gbp, hkd, and currencies
 * whose 50 units are worth far less than $0.50); no test or seed here depends on those.
 */
export const MIN_CHARGE_AMOUNT = 50;

/** An amount as Stripe writes it in its bounds messages, with thousands separated: `$999,999.99`, `¥99,999,999`. */
export function formatGroupedAmount(amount: number, currency: string): string {
  const code = currency.toLowerCase();
  const symbol = symbols[code] ?? `${code.toUpperCase()} `;
  const decimals = zeroDecimal.has(code) ? 0 : 2;
  const digits = (amount / 10 ** decimals).toLocaleString('en-US', { minimumFractionDigits: decimals, maximumFractionDigits: decimals });
  return `${symbol}${digits}`;
}

/**
 * The currencies Stripe takes a `currency` parameter in, lowercase ISO 4217 codes (OpenAPI 2023-08-16: "Must be a
 * supported currency"), as Stripe lists them to a US account when it refuses any other: `Invalid currency: zzz.
 * Stripe currently supports these currencies: usd, aed, …`, a 400 on `currency` (the list as Stripe sent it in 2024,
 * `hrk` still in it). The three-decimal currencies (bhd, jod, kwd, omr, tnd) are refused for a US account, which the
 * sandbox is. src/config.ts keeps its own copy for INTERLOCK_CREDIT_CURRENCY; tests/config-credit-currency.test.ts
 * keeps the two equal.
 */
export const SUPPORTED_CURRENCIES: readonly string[] = [
  'usd', 'aed', 'afn', 'all', 'amd', 'ang', 'aoa', 'ars', 'aud', 'awg', 'azn', 'bam', 'bbd', 'bdt', 'bgn', 'bif', 'bmd',
  'bnd', 'bob', 'brl', 'bsd', 'bwp', 'byn', 'bzd', 'cad', 'cdf', 'chf', 'clp', 'cny', 'cop', 'crc', 'cve', 'czk', 'djf',
  'dkk', 'dop', 'dzd', 'egp', 'etb', 'eur', 'fjd', 'fkp', 'gbp', 'gel', 'gip', 'gmd', 'gnf', 'gtq', 'gyd', 'hkd', 'hnl',
  'hrk', 'htg', 'huf', 'idr', 'ils', 'inr', 'isk', 'jmd', 'jpy', 'kes', 'kgs', 'khr', 'kmf', 'krw', 'kyd', 'kzt', 'lak',
  'lbp', 'lkr', 'lrd', 'lsl', 'mad', 'mdl', 'mga', 'mkd', 'mmk', 'mnt', 'mop', 'mur', 'mvr', 'mwk', 'mxn', 'myr', 'mzn',
  'nad', 'ngn', 'nio', 'nok', 'npr', 'nzd', 'pab', 'pen', 'pgk', 'php', 'pkr', 'pln', 'pyg', 'qar', 'ron', 'rsd', 'rub',
  'rwf', 'sar', 'sbd', 'scr', 'sek', 'sgd', 'shp', 'sle', 'sos', 'srd', 'std', 'szl', 'thb', 'tjs', 'top', 'try', 'ttd',
  'twd', 'tzs', 'uah', 'ugx', 'uyu', 'uzs', 'vnd', 'vuv', 'wst', 'xaf', 'xcd', 'xof', 'xpf', 'yer', 'zar', 'zmw',
];
const supported: ReadonlySet<string> = new Set(SUPPORTED_CURRENCIES);

/** Whether Stripe takes `currency` (any case: Stripe reads `USD` as `usd`). */
export function isSupportedCurrency(currency: string): boolean {
  return supported.has(currency.toLowerCase());
}

/** Stripe's refusal of a currency it does not support, naming every one it does. */
export function unsupportedCurrencyMessage(currency: string): string {
  return `Invalid currency: ${currency.toLowerCase()}. Stripe currently supports these currencies: ${SUPPORTED_CURRENCIES.join(', ')}`;
}

/**
 * Currencies whose charge and refund amounts Stripe takes only in multiples of a step of the smallest unit, though
 * the API keeps the currency's decimals. isk, step 100: from 2023-04-14 the card networks take whole krónur only, so
 * Stripe refuses an ISK amount not divisible by 100 in Charges and PaymentIntents, and a refund of one, with 400
 * `invalid_charge_amount_no_decimal_compatible`; 100 still means 1 króna (Stripe support, "Deprecation of fractional
 * ISK charges and refunds", which quotes the message below). Not here: huf, twd and ugx, whose whole-unit rules
 * are for payouts (docs.stripe.com/currencies#special-cases), which the sandbox does not model; and bhd, jod, kwd,
 * omr, tnd, whose charges must end in 0 (same page), since the sandbox, a US account, refuses those currencies.
 */
const chargeSteps: Readonly<Record<string, number>> = { isk: 100 };

/**
 * Stripe's refusal of `amount` (given as `param`) in `currency` when the currency takes only whole steps; null when
 * it is a whole step. The `param` is inferred: the support article quotes only the code and the message.
 */
export function fractionalAmountRefusal(amount: number, currency: string, param: string): SandboxError | null {
  const code = currency.toLowerCase();
  const step = chargeSteps[code];
  if (step === undefined || amount % step === 0) return null;
  return invalidRequest(
    `Invalid amount. Currency ${code.toUpperCase()} has become effectively zero-decimal and charged amounts must be evenly divisible by ${step}. See https://stripe.com/docs/currencies#special-cases for more information.`,
    { code: 'invalid_charge_amount_no_decimal_compatible', param },
  );
}
