// Payment methods and the test cards that drive outcomes (stripe-facts §4.7, §5.4). A magic id such as
// `pm_card_createDispute` becomes a fresh `pm_…` object, as in test mode; its behaviour stays in a side table.
import { requireObject, resourceMissing } from '../core/errors.js';
import { newId } from '../core/ids.js';
import { route } from '../http/router.js';
import type { Core } from '../core/core.js';
import type { Collection, StripeObject } from '../core/store.js';
import type { Route } from '../http/router.js';

export const disputeBehaviours = ['none', 'inquiry', 'fraudulent', 'product_not_received', 'multiple'] as const;
export type DisputeBehaviour = (typeof disputeBehaviours)[number];

export const refundBehaviours = ['succeeds', 'pending_then_succeeds', 'succeeds_then_fails'] as const;
export type RefundBehaviour = (typeof refundBehaviours)[number];

export interface TestCard {
  brand: 'visa' | 'mastercard' | 'amex';
  last4: string;
  dispute: DisputeBehaviour;
  refund: RefundBehaviour;
  /** A decline code makes confirmation fail with a 402 card error. */
  decline: string | null;
}

const card = (last4: string, overrides: Partial<TestCard> = {}): TestCard => ({
  brand: 'visa',
  last4,
  dispute: 'none',
  refund: 'succeeds',
  decline: null,
  ...overrides,
});

export const testCards: Readonly<Record<string, TestCard>> = {
  pm_card_visa: card('4242'),
  pm_card_bypassPending: card('0077'),
  pm_card_mastercard: card('4444', { brand: 'mastercard' }),
  pm_card_amex: card('8431', { brand: 'amex' }),
  pm_card_createDispute: card('0259', { dispute: 'fraudulent' }),
  pm_card_createDisputeProductNotReceived: card('2685', { dispute: 'product_not_received' }),
  pm_card_createDisputeInquiry: card('1976', { dispute: 'inquiry' }),
  pm_card_createMultipleDisputes: card('0079', { dispute: 'multiple' }),
  pm_card_pendingRefund: card('7726', { refund: 'pending_then_succeeds' }),
  pm_card_refundFail: card('5126', { refund: 'succeeds_then_fails' }),
  pm_card_chargeDeclined: card('0002', { decline: 'generic_decline' }),
  pm_card_visa_chargeDeclined: card('0002', { decline: 'generic_decline' }),
  // Attaches to a customer like any card; every charge on it is declined.
  pm_card_chargeCustomerFail: card('0341', { decline: 'generic_decline' }),
};

export interface PaymentMethod extends StripeObject {
  object: 'payment_method';
  allow_redisplay: 'unspecified';
  billing_details: { address: null; email: null; name: null; phone: null; tax_id: null };
  card: {
    brand: string;
    checks: { address_line1_check: null; address_postal_code_check: null; cvc_check: 'unchecked' };
    country: 'US';
    display_brand: string;
    exp_month: number;
    exp_year: number;
    funding: 'credit';
    generated_from: null;
    last4: string;
    networks: { available: string[]; preferred: null };
    regulated_status: 'unregulated';
    three_d_secure_usage: { supported: boolean };
    wallet: null;
  };
  customer: string | null;
  customer_account: null;
  livemode: false;
  metadata: Record<string, string>;
  type: 'card';
}

export interface PaymentMethods {
  readonly collection: Collection<PaymentMethod>;
  /** Resolves a magic test id or a stored `pm_…`, creating the object for a magic id. */
  resolve(id: string, param: string): { method: PaymentMethod; card: TestCard };
  cardOf(paymentMethodId: string): TestCard;
  routes: Route[];
}

export function createPaymentMethods({ store, clock }: Core): PaymentMethods {
  const collection = store.collection<PaymentMethod>('payment_method');
  const cards = store.sideTable<TestCard>('payment_method.card');

  const materialise = (testCard: TestCard): PaymentMethod => {
    const method = collection.insert({
      id: newId('pm'),
      object: 'payment_method',
      allow_redisplay: 'unspecified',
      billing_details: { address: null, email: null, name: null, phone: null, tax_id: null },
      card: {
        brand: testCard.brand,
        checks: { address_line1_check: null, address_postal_code_check: null, cvc_check: 'unchecked' },
        country: 'US',
        display_brand: testCard.brand,
        exp_month: 12,
        exp_year: new Date(clock.nowMs()).getUTCFullYear() + 3,
        funding: 'credit',
        generated_from: null,
        last4: testCard.last4,
        networks: { available: [testCard.brand], preferred: null },
        regulated_status: 'unregulated',
        three_d_secure_usage: { supported: true },
        wallet: null,
      },
      created: clock.nowSeconds(),
      customer: null,
      customer_account: null,
      livemode: false,
      metadata: {},
      type: 'card',
    });
    cards.set(method.id, testCard);
    return method;
  };

  const cardOf = (id: string): TestCard => cards.get(id) ?? testCards['pm_card_visa'] ?? card('4242');

  return {
    collection,
    resolve(id, param) {
      const magic = testCards[id];
      if (magic !== undefined) return { method: materialise(magic), card: magic };
      const stored = collection.get(id);
      if (stored === undefined) throw resourceMissing('PaymentMethod', id, param);
      return { method: stored, card: cardOf(id) };
    },
    cardOf,
    routes: [
      route({
        method: 'GET',
        path: '/v1/payment_methods/:id',
        params: {},
        // A test id such as `pm_card_visa` reads as a fresh payment method of that card, as in test mode.
        handle: (_params, path) => {
          const id = path['id'] ?? '';
          const magic = testCards[id];
          return magic === undefined ? requireObject(collection, 'PaymentMethod', id, 'payment_method') : materialise(magic);
        },
      }),
    ],
  };
}
