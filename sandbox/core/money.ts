// Amounts as Stripe writes them in messages: `$40.00`, `€12.50`, `¥500`.
const symbols: Readonly<Record<string, string>> = { usd: '$', eur: '€', gbp: '£', jpy: '¥', cad: 'CA$', aud: 'A$' };
const zeroDecimal = new Set(['bif', 'clp', 'djf', 'gnf', 'jpy', 'kmf', 'krw', 'mga', 'pyg', 'rwf', 'ugx', 'vnd', 'vuv', 'xaf', 'xof', 'xpf']);

export function formatAmount(amount: number, currency: string): string {
  const code = currency.toLowerCase();
  const symbol = symbols[code] ?? `${code.toUpperCase()} `;
  const digits = zeroDecimal.has(code) ? String(amount) : (amount / 100).toFixed(2);
  return `${symbol}${digits}`;
}
