// Balance transactions: the ledger lines money movements leave behind (charge, refund, refund failure, dispute
// withdrawal and reinstatement). Disputes embed theirs whole; refunds and charges refer to them by id.
import { requireObject } from '../core/errors.js';
import { newId } from '../core/ids.js';
import { listParams, paginate } from '../core/list.js';
import { currency, oneOf, str } from '../core/params.js';
import { route } from '../http/router.js';
import type { Core } from '../core/core.js';
import type { StripeObject } from '../core/store.js';
import type { Route } from '../http/router.js';

export const balanceTransactionTypes = ['charge', 'refund', 'refund_failure', 'adjustment', 'payment_refund'] as const;
export type BalanceTransactionType = (typeof balanceTransactionTypes)[number];

export interface FeeDetail {
  amount: number;
  application: null;
  currency: string;
  description: string;
  type: 'stripe_fee';
}

export interface BalanceTransaction extends StripeObject {
  object: 'balance_transaction';
  amount: number;
  available_on: number;
  balance_type: 'payments';
  currency: string;
  description: string | null;
  exchange_rate: null;
  fee: number;
  fee_details: FeeDetail[];
  net: number;
  reporting_category: string;
  source: string;
  status: 'available' | 'pending';
  type: BalanceTransactionType;
}

export interface LedgerEntry {
  amount: number;
  currency: string;
  source: string;
  type: BalanceTransactionType;
  reportingCategory: string;
  description?: string;
  fee?: { amount: number; description: string };
}

export interface BalanceTransactions {
  record(entry: LedgerEntry): BalanceTransaction;
  routes: Route[];
}

export function createBalanceTransactions({ store, clock }: Core): BalanceTransactions {
  const collection = store.collection<BalanceTransaction>('balance_transaction');

  const record = (entry: LedgerEntry): BalanceTransaction => {
    const now = clock.nowSeconds();
    const fee = entry.fee?.amount ?? 0;
    return collection.insert({
      id: newId('txn'),
      object: 'balance_transaction',
      amount: entry.amount,
      available_on: now,
      balance_type: 'payments',
      created: now,
      currency: entry.currency,
      description: entry.description ?? null,
      exchange_rate: null,
      fee,
      fee_details: entry.fee === undefined ? [] : [{ amount: fee, application: null, currency: entry.currency, description: entry.fee.description, type: 'stripe_fee' }],
      net: entry.amount - fee,
      reporting_category: entry.reportingCategory,
      source: entry.source,
      status: 'available',
      type: entry.type,
    });
  };

  const routes = [
    route({
      method: 'GET',
      path: '/v1/balance_transactions/:id',
      params: {},
      handle: (_params, path) => requireObject(collection, 'balance transaction', path['id'] ?? ''),
    }),
    route({
      method: 'GET',
      path: '/v1/balance_transactions',
      params: { ...listParams, source: str(), type: oneOf(balanceTransactionTypes), currency: currency() },
      handle: (params) => {
        const items = collection
          .newestFirst()
          .filter((t) => (params.source === undefined || t.source === params.source) && (params.type === undefined || t.type === params.type));
        return paginate(items, params, '/v1/balance_transactions');
      },
    }),
  ];
  return { record, routes };
}
