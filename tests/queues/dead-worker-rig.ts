// Stores on a fresh prefix with an approval granted and a memory target whose payment pi_1 is refundable, and a
// worker that dies mid-dispatch: what the recovery and sender-stop tests start from.
import { randomBytes } from 'node:crypto';
import { pino } from 'pino';
import { expect } from 'vitest';
import { createMemoryTarget, openStores, startSender, type Config, type MemoryTarget, type Stores } from '../../src/interlock.js';
import { approvalTerms, refundProposal, removePrefixes, testConfig, testKey } from '../support/harness.js';

const keyPair = testKey();

export type DeadWorkerRig = { config: Config; target: MemoryTarget; stores: Stores; open(): Promise<Stores>; approval: string };

/** The rig, on a tier-`tier` target; its stores closed and its keys removed by the closer pushed on `closers`. */
export async function deadWorkerRig(closers: (() => Promise<unknown>)[], tier: 1 | 2): Promise<DeadWorkerRig> {
  const config = testConfig({ keyPrefix: `t${randomBytes(6).toString('hex')}`, sendTimeoutMs: 3_000, claimTtlMs: 6_000 });
  const target = createMemoryTarget({ tier, sendTimeoutMs: config.sendTimeoutMs });
  target.world.set('payment:pi_1', { chargebacks: [], refunded_by_others: 0 });
  const open = () => openStores(config, { logger: pino({ level: 'silent' }), signingKey: keyPair.key });
  const stores = await open();
  closers.push(async () => {
    await stores.close();
    await removePrefixes([config.keyPrefix]);
  });
  const terms = approvalTerms();
  await stores.approvals.grant(terms);
  return { config, target, stores, open, approval: terms.id };
}

/** Another worker dispatches a refund and dies before sending it (its heartbeat gone with it): the effect id. */
export async function leftOpenByADeadWorker(open: () => Promise<Stores>, target: MemoryTarget, approval: string): Promise<string> {
  const dyingStores = await open();
  const dying = await startSender(dyingStores, target);
  target.inject({ kind: 'crash-before-send' });
  const proposal = refundProposal({ approval });
  await expect(dying.gate.submit(proposal)).rejects.toThrow(/simulated crash/);
  await dying.heartbeat.stop({ clear: true });
  await dyingStores.close();
  return dying.gate.effectIdOf(proposal);
}
