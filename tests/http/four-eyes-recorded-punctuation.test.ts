// Rule: four eyes holds however the name is spelled: the approver of a four-eyes approval cannot propose under it. An
// approval granted by an earlier version may name its approver with a dash or quote refused on arrival now (– — “ ”
// ′ « »): the approver can no longer write the name as recorded (400), so every spelling the refusal leads to
// ("Jean-Luc", "JeanLuc", "Jean Luc") must still be them (403 four_eyes): names compare by letters, digits and accents.
import request from 'supertest';
import { describe, expect, it } from 'vitest';
import { approvalBody, bearer, refundBody, rigSuite, TOKENS, uid } from './rig.js';

const rig = rigSuite();

describe('a four-eyes approval granted before 5b05673 to "Jean–Luc Picard" (an en dash)', () => {
  it.each(['Jean-Luc Picard', 'JeanLuc Picard', 'Jean Luc Picard'])('still refuses its approver proposing as %s (403 four_eyes)', async (agent) => {
    const pi = `pi_${uid()}`;
    rig.target.world.set(`payment:${pi}`, { chargebacks: [], refunded_by_others: 0 });
    const approval = approvalBody({ scope: `payment:${pi}`, approver: 'Jean Picard', four_eyes: true });
    const granted = await request(rig.app).post('/v1/approvals').set(bearer(TOKENS.danaApprover)).send(approval);
    expect(granted.status, JSON.stringify(granted.body)).toBe(201);
    // What an earlier version stored (it took any Common character): the approver's name with an en dash.
    const key = rig.stores.keys.approval(`payment:${pi}`, approval.id as string);
    expect(await rig.redis.hget(key, 'approver')).toBe('Jean Picard');
    await rig.redis.hset(key, 'approver', 'Jean\u2013Luc Picard');
    // The name as recorded is refused now, so the approver cannot be told apart by it:
    const asRecorded = await request(rig.app).post('/v1/refunds').set(bearer(TOKENS.support)).send(refundBody({ payment_intent: pi, approval: approval.id, agent: 'Jean\u2013Luc Picard' }));
    expect(asRecorded.status).toBe(400);
    expect(JSON.stringify(asRecorded.body)).toContain('U+2013');
    // ...and the spelling the refusal leads to passes four eyes.
    const proposed = await request(rig.app).post('/v1/refunds').set(bearer(TOKENS.support)).send(refundBody({ payment_intent: pi, approval: approval.id, agent }));
    expect(proposed.status, JSON.stringify(proposed.body)).toBe(403);
  });
});
