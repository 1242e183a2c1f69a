// What the support API is built from: its dependencies as createApp takes them, and the resolved context the
// routes share. Everything that moves money, reads Stripe or runs recovery is injected, so the same app serves the
// real service, the sandbox and tests, and never builds a queue, a target or a worker itself.
import type { Express } from 'express';
import type { Logger } from 'pino';
import { approvalOptionsOf, parseApprovalOptions, type ApprovalOptions, type ApprovalTerms, type Effect, type EffectKind, type Stores } from '../../src/interlock.js';
import type { DecisionsQueue } from '../../queues/decisions.js';
import type { EffectsQueue } from '../../queues/effects.js';
import type { OpsQueues } from '../ops/queues.js';
import type { StripeLinks, UiSection } from '../ui/pages.js';
import type { TokenRegistry } from './tokens.js';

/**
 * Reads named facts about an effect's subject as they are now (the Stripe target's premise reads; in tests the
 * memory target's). A fact it does not know is absent or null; it throws when it cannot read.
 */
export type FactReader = (effect: Effect, names: readonly string[], context: { effectId: string; timeoutMs: number }) => Promise<Record<string, unknown>>;

/** The premise names read at decision time for each kind of effect (the target's own names). */
export type PremiseNames = Record<EffectKind, readonly string[]>;

export const DEFAULT_PREMISES: PremiseNames = {
  refund: ['chargebacks', 'refunded_by_others'],
  credit: ['subscription_status', 'incident_compensation'],
};

/**
 * The producer side of the effects queue (queues/effects.ts): record then enqueue, answer from the journal a proposal
 * whose facts could not be read, and hear an effect's answer.
 */
export type EffectsProducer = Pick<EffectsQueue, 'propose' | 'recall' | 'waitFor'>;

/** The producer side of the decisions queue (queues/decisions.ts): store a case and queue it, hear its decision. */
export type CasesProducer = Pick<DecisionsQueue, 'submit' | 'waitFor'>;

/**
 * One check of /readyz. A failed result marked `advisory` is reported (status `degraded`) without making the process
 * unready: something every process of the deployment meets alike (Stripe down), which taking them out of rotation
 * would not fix.
 */
export type ReadinessCheck = { name: string; check: () => Promise<boolean | { ok: boolean; detail?: string; advisory?: boolean }> };

/** The alerts list (issue 10), newest first. */
/** A page of alerts, newest first, and the cursor of the page after it (null on the last). */
export type AlertsReader = (query: { all: boolean; limit: number; cursor?: string }) => Promise<{ data: readonly unknown[]; next: string | null }>;

export type ApiLimits = {
  /** Largest request body, in bytes (413 past it). Default 256 KiB: a proposal holds at most 64,000 characters of JSON, each up to 3 bytes of UTF-8. */
  bodyBytes?: number;
  /** Requests per minute per token, as a bucket of `rateBurst`; null turns the limit off. Default 600. */
  ratePerMinute?: number | null;
  /** Default: the per-minute rate. */
  rateBurst?: number;
  /** How long the facts of one proposal may take to read, in ms. Default 10,000. */
  factTimeoutMs?: number;
};

export type AppDeps = {
  stores: Stores;
  effects: EffectsProducer;
  readFacts: FactReader;
  /** Takes support cases for the decider (POST /v1/cases); absent in a process that takes none (503 not_available). */
  decisions?: CasesProducer;
  tokens: TokenRegistry;
  logger: Logger;
  premises?: PremiseNames;
  alerts?: AlertsReader;
  /** Runs one recovery pass (an operator's POST /v1/recover); absent in a process that cannot recover. */
  recover?: () => Promise<unknown>;
  /** What /readyz asks, besides the process being up. Default: Redis answers and is durable (or opted out). */
  readiness?: readonly ReadinessCheck[];
  limits?: ApiLimits;
  /**
   * The seam for routes that are not the support API (the Stripe webhook, `POST /webhooks/stripe`): called with the
   * app after the request id and the request log, before authentication and before any body is parsed, so such a
   * route reads its own raw body and answers without a bearer token. Errors it passes to `next` get the API's error
   * answers.
   */
  mount?: (app: Express) => void;
  /** GET /metrics (auditor and operator roles): the process's Prometheus registry (ops/metrics.ts). Absent: no route. */
  metrics?: { render(): Promise<{ contentType: string; text: string }> };
  /** The queues the dashboard under /admin/queues shows (operator role). Absent: no dashboard. */
  queues?: OpsQueues;
  /** The page under /ui: where Stripe ids link to (default: the test-mode dashboard), and extra sections. */
  ui?: { links?: StripeLinks; sections?: readonly UiSection[] };
  /**
   * Whether Redis keeps what this process answers is stored (the durability monitor of src/redis/durability.ts):
   * `assertDurable()` throws redis_not_durable (503) while it does not, and every request that records something is
   * refused then, nothing written. Absent: not checked here.
   */
  intake?: IntakeGuard;
};

/** The durability check a request that records something passes first (AppDeps.intake). */
export type IntakeGuard = { assertDurable(): void };

export function createApprovalOptions(stores: Stores) {
  const store = approvalOptionsOf(stores);
  return {
    /** Grants the approval with these options in one step: both are written when it is created, neither otherwise. */
    async grant(terms: ApprovalTerms, options: ApprovalOptions): Promise<{ created: boolean }> {
      return stores.approvals.grant(terms, JSON.stringify(options));
    },
    async get(approvalId: string): Promise<ApprovalOptions | null> {
      const text = await store.get(approvalId);
      return text === null ? null : parseApprovalOptions(text);
    },
  };
}

export type ApiContext = {
  stores: Stores;
  effects: EffectsProducer;
  readFacts: FactReader;
  decisions: CasesProducer | null;
  premises: PremiseNames;
  alerts: AlertsReader;
  recover: (() => Promise<unknown>) | null;
  readiness: readonly ReadinessCheck[];
  logger: Logger;
  factTimeoutMs: number;
  approvalOptions: ReturnType<typeof createApprovalOptions>;
  intake: IntakeGuard | null;
};
