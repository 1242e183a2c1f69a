// The control API under /_sandbox/: what test cards and wall-clock waits do against real Stripe, made
// deterministic for tests. Stripe never uses this prefix. Bodies may be JSON or form encoded; no auth.
// The routes that stand in for the bank or the card network (a refund settling, failing or needing action, a dispute
// opening or escalating) cause automatic events, `request: {id: null, idempotency_key: null}` as Stripe sends them
// (stripe-facts §4.7, §6.1), not events of the control request.
import { automatic } from './core/event-bus.js';
import { resourceMissing } from './core/errors.js';
import { bool, int, oneOf, required, str } from './core/params.js';
import { route } from './http/router.js';
import { disputeKindParam, disputeReasonParam } from './objects/disputes.js';
import { refundFailureReasons } from './objects/refunds.js';
import { deliveryStates, ruleActions } from './webhooks/delivery.js';
import { errorTypes } from './core/errors.js';
import { dropMoments } from './http/faults.js';
import type { EventOrigin } from './core/event-bus.js';
import type { Route } from './http/router.js';
import type { Refund } from './objects/refunds.js';
import type { Charges } from './objects/charges.js';
import type { World } from './world.js';

/**
 * The longest wait a control rule may ask for: Node's longest timer (about 24.8 days). A longer one would fire at once
 * (Node clamps it to 1 ms), so a "slow" or "delay" rule meant to hold a request would let it through.
 */
const MAX_TIMER_MS = 2_147_483_647;
/** The most copies a `duplicate` rule may send of one delivery: each copy is a queued delivery held in memory. */
const MAX_COPIES = 100;

export function controlRoutes(world: World, charges: Charges): Route[] {
  const { core, delivery, idempotency, refunds, disputes, faults, requests } = world;
  const { settings, clock } = core;

  const refundTransition = (name: string, apply: (refund: Refund, origin: EventOrigin) => void): Route =>
    route({
      method: 'POST',
      path: `/_sandbox/refunds/:id/${name}`,
      params: {},
      handle: (_params, path) => {
        const refund = refunds.require(path['id'] ?? '');
        apply(refund, automatic);
        return refund;
      },
    });

  const configView = () => ({ ...settings, idempotencyTtlSeconds: idempotency.ttlSeconds(), nowSeconds: clock.nowSeconds() });

  return [
    route({ method: 'GET', path: '/_sandbox/health', params: {}, handle: () => ({ ok: true }) }),
    route({
      method: 'POST',
      path: '/_sandbox/reset',
      params: {},
      handle: () => {
        world.reset();
        return { ok: true };
      },
    }),
    route({ method: 'GET', path: '/_sandbox/config', params: {}, handle: configView }),
    route({
      method: 'POST',
      path: '/_sandbox/config',
      params: {
        idempotency_ttl_seconds: int({ min: 0 }),
        pending_refund_dispute_window_seconds: int({ min: 0 }),
        dispute_fee: int({ min: 0 }),
        reinstate_dispute_fee_on_win: bool(),
        dispute_due_days: int({ min: 0 }),
        webhook_timeout_ms: int({ min: 1, max: MAX_TIMER_MS }),
        webhook_max_retries: int({ min: 0 }),
        webhook_concurrency: int({ min: 1, max: 64 }),
        stripecli_reconnect_delay_seconds: int({ min: 1, max: Math.floor(MAX_TIMER_MS / 1000) }),
        stripecli_session_expires_after_ms: int({ min: 1, max: MAX_TIMER_MS }),
      },
      handle: (params) => {
        if (params.idempotency_ttl_seconds !== undefined) idempotency.setTtlSeconds(params.idempotency_ttl_seconds);
        if (params.pending_refund_dispute_window_seconds !== undefined) settings.pendingRefundDisputeWindowSeconds = params.pending_refund_dispute_window_seconds;
        if (params.dispute_fee !== undefined) settings.disputeFee = params.dispute_fee;
        if (params.reinstate_dispute_fee_on_win !== undefined) settings.reinstateDisputeFeeOnWin = params.reinstate_dispute_fee_on_win;
        if (params.dispute_due_days !== undefined) settings.disputeDueDays = params.dispute_due_days;
        if (params.webhook_timeout_ms !== undefined) settings.webhookTimeoutMs = params.webhook_timeout_ms;
        if (params.webhook_max_retries !== undefined) settings.webhookMaxRetries = params.webhook_max_retries;
        if (params.webhook_concurrency !== undefined) settings.webhookConcurrency = params.webhook_concurrency;
        if (params.stripecli_reconnect_delay_seconds !== undefined) settings.cliReconnectDelaySeconds = params.stripecli_reconnect_delay_seconds;
        if (params.stripecli_session_expires_after_ms !== undefined) settings.cliSessionExpiresAfterMs = params.stripecli_session_expires_after_ms;
        return configView();
      },
    }),
    route({
      method: 'POST',
      path: '/_sandbox/clock/advance',
      params: { seconds: required(int({ min: 0 })) },
      handle: (params) => {
        clock.advance(params.seconds);
        return configView();
      },
    }),
    route({
      method: 'POST',
      path: '/_sandbox/idempotency/age',
      params: { seconds: required(int({ min: 0 })) },
      handle: (params) => {
        idempotency.age(params.seconds);
        return { ok: true, keys: idempotency.size() };
      },
    }),
    route({
      method: 'POST',
      path: '/_sandbox/faults/slow',
      params: { path: str(), method: oneOf(['GET', 'POST', 'DELETE']), ms: required(int({ min: 0, max: MAX_TIMER_MS })), count: int({ min: 1 }) },
      handle: (params) => {
        faults.addSlow({ path: params.path ?? null, method: params.method ?? null, ms: params.ms, remaining: params.count ?? 1 });
        return { ok: true };
      },
    }),
    route({
      method: 'POST',
      path: '/_sandbox/faults/fail',
      params: {
        path: str(),
        method: oneOf(['GET', 'POST', 'DELETE']),
        status: required(int({ min: 400, max: 599 })),
        type: oneOf(errorTypes),
        code: str(),
        message: str(),
        retry_after: int({ min: 0 }),
        count: int({ min: 1 }),
        stored: bool(),
      },
      handle: (params) => {
        faults.addFail({
          stored: params.stored ?? false,
          path: params.path ?? null,
          method: params.method ?? null,
          status: params.status,
          type: params.type ?? defaultErrorType(params.status),
          code: params.code ?? null,
          message: params.message ?? `Injected ${params.status} (sandbox fault).`,
          retryAfterSeconds: params.retry_after ?? null,
          remaining: params.count ?? 1,
        });
        return { ok: true };
      },
    }),
    route({
      method: 'POST',
      path: '/_sandbox/faults/drop',
      params: { path: str(), method: oneOf(['GET', 'POST', 'DELETE']), when: oneOf(dropMoments), count: int({ min: 1 }) },
      handle: (params) => {
        faults.addDrop({ path: params.path ?? null, method: params.method ?? null, when: params.when ?? 'before', remaining: params.count ?? 1 });
        return { ok: true };
      },
    }),
    route({
      method: 'DELETE',
      path: '/_sandbox/faults',
      params: {},
      handle: () => {
        faults.clear();
        return { ok: true };
      },
    }),
    route({ method: 'GET', path: '/_sandbox/requests', params: { after: int({ min: 0 }) }, handle: (params) => ({ data: requests.list(params.after) }) }),
    route({
      method: 'DELETE',
      path: '/_sandbox/requests',
      params: {},
      handle: () => {
        requests.clear();
        return { ok: true };
      },
    }),
    route({
      method: 'POST',
      path: '/_sandbox/disputes',
      params: { charge: required(str()), kind: disputeKindParam, reason: disputeReasonParam },
      handle: (params) => disputes.open(charges.require(params.charge, 'charge'), params.kind ?? 'chargeback', params.reason ?? 'fraudulent', automatic),
    }),
    route({
      method: 'POST',
      path: '/_sandbox/disputes/:id/escalate',
      params: {},
      handle: (_params, path) => {
        const dispute = disputes.require(path['id'] ?? '');
        disputes.escalate(dispute, automatic);
        return dispute;
      },
    }),
    refundTransition('settle', (refund, origin) => refunds.settle(refund, origin)),
    refundTransition('require_action', (refund, origin) => refunds.requireAction(refund, origin)),
    route({
      method: 'POST',
      path: '/_sandbox/refunds/:id/fail',
      params: { failure_reason: oneOf(refundFailureReasons) },
      handle: (params, path) => {
        const refund = refunds.require(path['id'] ?? '');
        refunds.fail(refund, params.failure_reason ?? 'unknown', automatic);
        return refund;
      },
    }),
    route({
      method: 'GET',
      path: '/_sandbox/webhooks/deliveries',
      params: { event: str(), endpoint: str(), type: str(), state: oneOf(deliveryStates) },
      handle: (params) => ({ data: delivery.list(params) }),
    }),
    route({ method: 'GET', path: '/_sandbox/webhooks/rules', params: {}, handle: () => ({ data: delivery.rules() }) }),
    route({
      method: 'POST',
      path: '/_sandbox/webhooks/rules',
      params: {
        action: required(oneOf(ruleActions)),
        type: str(),
        event: str(),
        endpoint: str(),
        count: int({ min: 1 }),
        copies: int({ min: 2, max: MAX_COPIES }),
        delay_ms: int({ min: 0, max: MAX_TIMER_MS }),
      },
      handle: (params) =>
        delivery.addRule({
          action: params.action,
          type: params.type ?? null,
          event: params.event ?? null,
          endpoint: params.endpoint ?? null,
          remaining: params.count ?? 1,
          copies: params.copies ?? 2,
          delay_ms: params.delay_ms ?? 0,
        }),
    }),
    route({
      method: 'DELETE',
      path: '/_sandbox/webhooks/rules',
      params: {},
      handle: () => {
        delivery.clearRules();
        return { ok: true };
      },
    }),
    route({
      method: 'POST',
      path: '/_sandbox/webhooks/release',
      params: { order: oneOf(['fifo', 'reverse']), endpoint: str() },
      handle: (params) => ({ data: delivery.release(params.order ?? 'fifo', params.endpoint) }),
    }),
    route({
      method: 'POST',
      path: '/_sandbox/webhooks/redeliver',
      params: { delivery: str() },
      handle: (params) => {
        const sent = delivery.redeliver(params.delivery);
        if (params.delivery !== undefined && sent.length === 0) throw resourceMissing('delivery', params.delivery, 'delivery');
        return { data: sent };
      },
    }),
    route({ method: 'GET', path: '/_sandbox/stripecli/sessions', params: {}, handle: () => ({ data: world.stripeCli.sessions() }) }),
    route({
      method: 'POST',
      path: '/_sandbox/stripecli/sessions/:id/expire',
      params: {},
      handle: (_params, path) => {
        const id = path['id'] ?? '';
        if (!world.stripeCli.expire(id)) throw resourceMissing('stripe listen session', id);
        return { ok: true };
      },
    }),
    route({
      method: 'POST',
      path: '/_sandbox/webhooks/idle',
      params: { timeout_ms: int({ min: 0, max: MAX_TIMER_MS }) },
      handle: async (params) => ({ idle: await delivery.idle(params.timeout_ms ?? 5_000) }),
    }),
  ];
}

/** The error type Stripe uses for a status, so the SDK raises the class it raises for Stripe's own answer. */
function defaultErrorType(status: number): (typeof errorTypes)[number] {
  if (status === 429) return 'rate_limit_error';
  if (status === 402) return 'card_error';
  if (status === 401) return 'authentication_error';
  if (status >= 500 || status === 409) return 'api_error';
  return 'invalid_request_error';
}
