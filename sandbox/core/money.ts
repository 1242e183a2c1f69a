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
