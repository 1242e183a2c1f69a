// A person's action on an inbox item is a RESOLVED entry in the effect's receipt (issue 13 §4): covered by the chain
// and the signature like every entry, so editing it, forging it without the key or dropping it is caught; it must
// follow the inbox's rules (one action per item, a resolution only of an AMBIGUOUS effect, a re-approval only of a
// refusal and under the request derived from its item); and a resolution answers for the gate only where the gate
// could not, never overriding what Stripe's own facts say.
import { describe, expect, it } from 'vitest';
import { effectIdFor } from '../../src/core/effect-id.js';
import type { Draft, EntryKind } from '../../src/core/entries.js';
import { buildReceipt } from '../../src/core/receipt.js';
import { verify } from '../../src/core/verify.js';
import { testKey } from '../support/harness.js';
import { chainEffectId, chainReceipt, checks, drafts, sealChain, T0 } from './entry-chain.js';

const { key, publicKeys } = testKey();
const other = testKey();

const ambiguous = (): Draft<'AMBIGUOUS'> => ({ kind: 'AMBIGUOUS', reason: 'tier 3: no dedupe and no lookup', rechecked: null, epoch: 1 });
const refusedStale = (): Draft<'REFUSED'> => ({
  kind: 'REFUSED', code: 'REFUSED:stale_premise', reason: 'chargebacks changed', checks: checks({ violations: ['chargebacks changed'], changes: [{ field: 'chargebacks', was: [], now: ['du_1'] }] }),
  rechecked: null, changes: [{ field: 'chargebacks', was: [], now: ['du_1'] }], resolves: false,
});

function resolved(name: string, overrides: Partial<Draft<'RESOLVED'>> = {}): Draft<'RESOLVED'> {
  return { kind: 'RESOLVED', item: `ambiguous:${chainEffectId(name)}`, action: 'resolve', by: { name: 'alex', role: 'approver' }, note: 'checked the dashboard', resolution: 'did_not_land', reapproval: null, ...overrides };
}

function reapproved(name: string): Draft<'RESOLVED'> {
  const item = `stale_premise:${chainEffectId(name)}`;
  const requestId = `reapproval:${item}`;
  return { kind: 'RESOLVED', item, action: 'reapprove', by: { name: 'alex', role: 'approver' }, note: '', resolution: null, reapproval: { approval: 'ap_new', requestId, effectId: effectIdFor({ requestId, effect: null }) } };
}

const sent = (): Draft<EntryKind>[] => [drafts.proposed(), drafts.authorized(), drafts.dispatched()];

function problemsOf(name: string, list: Draft<EntryKind>[]): string[] {
  return verify(chainReceipt(name, list, key), { publicKeys }).problems;
}

describe('a RESOLVED entry in a receipt', () => {
  it('verifies, is reported with who acted, and answers for an AMBIGUOUS effect on the person\'s word', () => {
    const verification = verify(chainReceipt('op_ok', [...sent(), ambiguous(), resolved('op_ok')], key), { publicKeys });
    expect(verification.problems).toEqual([]);
    expect(verification).toMatchObject({ valid: true, outcome: 'AMBIGUOUS', happened: 'unknown', answer: 'not_returned', answerFrom: 'operator', answerMatchesFinalMoney: null });
    expect(verification.operatorActions).toEqual([expect.objectContaining({ action: 'resolve', resolution: 'did_not_land', by: { name: 'alex', role: 'approver' }, note: 'checked the dashboard' })]);
    const landed = verify(chainReceipt('op_landed', [...sent(), ambiguous(), resolved('op_landed', { resolution: 'landed' })], key), { publicKeys });
    expect(landed).toMatchObject({ valid: true, answer: 'returned', answerFrom: 'operator' });
    const nobody = verify(chainReceipt('op_none', [...sent(), ambiguous()], key), { publicKeys });
    expect(nobody).toMatchObject({ answer: 'unknown', answerFrom: null, operatorActions: [] });
  });

  it('never overrides Stripe\'s facts: "did not land" against an OBSERVED succeeded refund keeps the final money and says they disagree', () => {
    const verification = verify(
      chainReceipt('op_contradicted', [...sent(), ambiguous(), resolved('op_contradicted'), drafts.observed({ objectType: 'refund', objectId: 're_1', status: 'succeeded', amount: 2_000 })], key),
      { publicKeys },
    );
    expect(verification.problems).toEqual([]);
    expect(verification.finalMoney.status).toBe('returned');
    expect(verification).toMatchObject({ answer: 'not_returned', answerFrom: 'operator', answerMatchesFinalMoney: false });
  });

  it('a gate that knows keeps its own answer: a resolution cannot change a committed effect\'s answer, and is a problem there', () => {
    const verification = verify(chainReceipt('op_committed', [...sent(), drafts.committed('re_2'), resolved('op_committed')], key), { publicKeys });
    expect(verification.answer).toBe('returned');
    expect(verification.answerFrom).toBe('gate');
    expect(verification.valid).toBe(false);
    expect(verification.problems.join('\n')).toMatch(/entry 5 \(RESOLVED\) resolves an effect whose outcome was COMMITTED, not AMBIGUOUS/);
  });

  it('a re-approval of a refusal verifies and names the new request; of an AMBIGUOUS effect it is a problem', () => {
    const ok = verify(chainReceipt('op_reapprove', [drafts.proposed(), drafts.authorized(), refusedStale(), reapproved('op_reapprove')], key), { publicKeys });
    expect(ok.problems).toEqual([]);
    expect(ok.operatorActions[0]?.reapproval).toMatchObject({ approval: 'ap_new', requestId: `reapproval:stale_premise:${chainEffectId('op_reapprove')}` });
    const bad = problemsOf('op_reapprove_amb', [...sent(), ambiguous(), { ...reapproved('op_reapprove_amb'), item: `ambiguous:${chainEffectId('op_reapprove_amb')}`, reapproval: null }]);
    expect(bad.join('\n')).toMatch(/ambiguous does not allow/);
    expect(bad.join('\n')).toMatch(/re-approves an effect whose outcome was AMBIGUOUS/);
  });

  it('breaks the rules readably: a second action on one item, another effect\'s item, an action while a dispatch is open, a re-approval under another request', () => {
    expect(problemsOf('op_twice', [...sent(), ambiguous(), resolved('op_twice'), resolved('op_twice', { action: 'dismiss', resolution: null })]).join('\n')).toMatch(/entry 6 \(RESOLVED\) acts a second time on item/);
    expect(problemsOf('op_foreign', [...sent(), ambiguous(), resolved('op_foreign', { item: `ambiguous:${chainEffectId('someone_else')}` })]).join('\n')).toMatch(/not an inbox item of this effect/);
    expect(problemsOf('op_open', [...sent(), resolved('op_open', { action: 'dismiss', resolution: null })]).join('\n')).toMatch(/recorded while a dispatch was open/);
    const forged = reapproved('op_forged_request');
    const other_request = { ...forged, reapproval: { approval: 'ap_new', requestId: 'case-chosen-by-hand', effectId: effectIdFor({ requestId: 'case-chosen-by-hand', effect: null }) } };
    expect(problemsOf('op_forged_request', [drafts.proposed(), drafts.authorized(), refusedStale(), other_request]).join('\n')).toMatch(/request other than the one derived from its item/);
    // Two items of one effect (refused on a stale premise, re-decided, refused at recovery) each re-approved: the payload twice.
    const stale = reapproved('op_two_items');
    const atRecovery = `lease_at_recovery:${chainEffectId('op_two_items')}`;
    const second = { ...stale, item: atRecovery, reapproval: { approval: 'ap_other', requestId: `reapproval:${atRecovery}`, effectId: effectIdFor({ requestId: `reapproval:${atRecovery}`, effect: null }) } };
    const refusedAtRecovery: Draft<'REFUSED'> = { ...refusedStale(), code: 'REFUSED:lease_at_recovery', reason: 'approval revoked' };
    expect(problemsOf('op_two_items', [drafts.proposed(), drafts.authorized(), refusedStale(), drafts.proposed(), drafts.authorized(), refusedAtRecovery, stale, second]).join('\n')).toMatch(/entry 8 \(RESOLVED\) re-approves the effect a second time .*one refused payload is re-approved once/);
    expect(problemsOf('op_no_resolution', [...sent(), ambiguous(), resolved('op_no_resolution', { resolution: null })]).join('\n')).toMatch(/without saying whether the effect landed/);
  });

  it('is covered by the chain and the signature: an edited note or actor, a dropped action, an action signed by another key are caught', () => {
    const receipt = chainReceipt('op_tamper', [...sent(), ambiguous(), resolved('op_tamper')], key);
    const edit = (change: (entry: Record<string, unknown>) => void) => {
      const copy = JSON.parse(JSON.stringify(receipt)) as { entries: Record<string, unknown>[] };
      change(copy.entries[4] as Record<string, unknown>);
      return verify(copy, { publicKeys });
    };
    const note = edit((entry) => {
      entry.note = 'it landed, trust me';
    });
    expect(note.valid).toBe(false);
    expect(note.problems.join('\n')).toMatch(/entry 5 \(RESOLVED\) was altered/);
    const actor = edit((entry) => {
      entry.by = { name: 'mallory', role: 'approver' };
    });
    expect(actor.valid).toBe(false);
    const resolution = edit((entry) => {
      entry.resolution = 'landed';
    });
    expect(resolution.valid).toBe(false);

    const dropped = JSON.parse(JSON.stringify(receipt)) as { entries: unknown[] };
    dropped.entries.pop();
    const droppedVerification = verify(dropped, { publicKeys });
    expect(droppedVerification.valid).toBe(false);
    expect(droppedVerification.problems.join('\n')).toMatch(/tail was cut/);

    // An action appended and signed by someone without the service's key: a chain and head of their own.
    const effectId = chainEffectId('op_forged');
    const honest = sealChain(effectId, [...sent(), ambiguous()], key);
    const forged = sealChain(effectId, [resolved('op_forged')], other.key, T0 + 100).map((entry) => ({ ...entry, prev: honest.at(-1)?.hash ?? null }));
    const spliced = buildReceipt(effectId, [...honest, ...forged], other.key, T0 + 200);
    const forgedVerification = verify(JSON.parse(JSON.stringify(spliced)), { publicKeys });
    expect(forgedVerification.valid).toBe(false);
    expect(forgedVerification.problems.join('\n')).toMatch(/RESOLVED\).*(unknown key|altered)|head is signed with an unknown key/);
  });

  it('judges each action by the outcome before it without re-reading the chain: verify reads each entry a bounded number of times, however many actions there are', () => {
    // Not a timing: the entries are counted as they are read. Re-deriving the outcome from the start at each RESOLVED
    // entry read the chain once per action (a receipt of 32,000 dismissals took 17 s to verify).
    const readsPerEntry = (actions: number) => {
      const name = `op_many_${actions}`;
      const dismissals = Array.from({ length: actions }, (_, index) => resolved(name, { item: `ambiguous:${chainEffectId(name)}`, action: 'dismiss', resolution: null, note: `look ${index}` }));
      const copy = JSON.parse(JSON.stringify(chainReceipt(name, [...sent(), ambiguous(), resolved(name), ...dismissals], key))) as { entries: Record<string, unknown>[] };
      let reads = 0;
      copy.entries = copy.entries.map((entry) => new Proxy(entry, { get: (target, field, receiver) => {
        reads += 1;
        return Reflect.get(target, field, receiver) as unknown;
      } }));
      const verification = verify(copy, { publicKeys });
      // Every dismissal after the first action on the item is a second action on it: the rules still ran on each
      // (a verification lists at most 200 problems and counts the rest in its last line).
      expect(verification.problems).toHaveLength(Math.min(actions, 200));
      if (actions > 200) expect(verification.problems.at(-1)).toBe(`and ${actions - 199} more problems`);
      expect(verification).toMatchObject({ outcome: 'AMBIGUOUS', answer: 'not_returned', answerFrom: 'operator' });
      return reads / copy.entries.length;
    };
    const few = readsPerEntry(50);
    const many = readsPerEntry(1_000);
    expect(many).toBeLessThan(few * 1.5);
  });

  it('is malformed when its fields are not the inbox\'s: an unknown action or resolution is a shape problem', () => {
    const receipt = chainReceipt('op_shape', [...sent(), ambiguous(), resolved('op_shape')], key);
    for (const change of [{ action: 'refund_again' }, { resolution: 'probably' }, { by: 'alex' }]) {
      const copy = JSON.parse(JSON.stringify(receipt)) as { entries: Record<string, unknown>[] };
      Object.assign(copy.entries[4] as Record<string, unknown>, change);
      const verification = verify(copy, { publicKeys });
      expect(verification.valid, JSON.stringify(change)).toBe(false);
      expect(verification.problems.join('\n')).toMatch(/malformed/);
    }
  });
});
