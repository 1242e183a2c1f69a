// Rule: an approval is granted only under an id its own URL can reach. "." and ".." match the approval id rule, but
// every URL client (fetch, browsers, curl) reads them, spelled %2E%2E too, as steps of the path, so
// /v1/approvals/../revoke never reaches the approval, as case ids already say (src/core/cases.ts). A grant under one
// is refused, by the API (naming the field and saying why) and by the gate's own grant (termsProblems: the CLI and
// every caller of approvals.grant). An approval an earlier version stored under one is not stranded: it is still
// read, proposed under and revoked (as the CLI revokes it).
import request from 'supertest';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { termsProblems, type ApprovalTerms } from '../../src/core/approval.js';
import { assertPartition } from '../../src/redis/keys.js';
import { createScriptRunner } from '../../src/redis/scripts.js';
import { approvalBody, bearer, refundBody, startRig, TOKENS, uid, type Rig } from './rig.js';

const PATH_STEP = 'may not be . or ..: a URL reads them as steps of its path';

let rig: Rig;
beforeAll(async () => {
  rig = await startRig();
});
afterAll(async () => {
  await rig?.close();
});

/** Writes an approval as a grant did before this rule: the same binding and the same script, without termsProblems. */
async function grantAsBefore(terms: ApprovalTerms): Promise<void> {
  const partition = assertPartition(terms.scope);
  await rig.redis.hsetnx(rig.stores.keys.approvalPartitions, terms.id, partition);
  await createScriptRunner(rig.redis)('grant-approval-1', [rig.stores.keys.approval(partition, terms.id)], [JSON.stringify(terms), '']);
}

for (const id of ['.', '..']) {
  it(`refuses to grant the approval id "${id}" over the API, naming the field and why, and writes nothing`, async () => {
    const answer = await request(rig.app).post('/v1/approvals').set(bearer(TOKENS.approver)).send(approvalBody({ id, scope: `payment:pi_${uid()}` }));
    expect(answer.status, JSON.stringify(answer.body)).toBe(400);
    const fields = answer.body.error.fields as { path: string; message: string }[];
    expect(fields.filter((field) => field.path === 'id').map((field) => field.message)).toEqual([expect.stringContaining(PATH_STEP)]);
    expect(await rig.redis.hexists(rig.stores.keys.approvalPartitions, id)).toBe(0);
  });

  it(`the gate's own grant (the CLI's) refuses the approval id "${id}" and says to use another id`, async () => {
    const terms = { id, approver: 'dana@support', capCents: 3_000, expiresAt: Date.UTC(2099, 0, 1), maxUses: 1, scope: `payment:pi_${uid()}` };
    expect(termsProblems(terms)).toEqual([expect.stringMatching(/^id may not be \. or \.\.: a URL reads them as steps of its path.*use another id$/)]);
    await expect(rig.stores.approvals.grant(terms)).rejects.toMatchObject({ code: 'invalid_approval', message: expect.stringContaining(PATH_STEP) });
    expect(await rig.redis.hexists(rig.stores.keys.approvalPartitions, id)).toBe(0);
  });
}

it('still grants ids with dots that are not a path step ("...", "a.b", ".a")', async () => {
  for (const id of ['...', `a.${uid()}`, `.${uid()}`]) {
    const answer = await request(rig.app).post('/v1/approvals').set(bearer(TOKENS.approver)).send(approvalBody({ id, scope: `payment:pi_${uid()}` }));
    expect(answer.status, `${id}: ${JSON.stringify(answer.body)}`).toBe(201);
  }
});

it('an approval stored under ".." before the rule is still read, proposed under and revoked', async () => {
  const pi = `pi_${uid()}`;
  rig.target.world.set(`payment:${pi}`, { chargebacks: [], refunded_by_others: 0 });
  await grantAsBefore({ id: '..', approver: 'dana@support', capCents: 5_000, expiresAt: Date.UTC(2099, 0, 1), maxUses: 3, scope: `payment:${pi}` });
  // A client that sends the path as it is (supertest, curl --path-as-is) still reaches it.
  const read = await request(rig.app).get('/v1/approvals/..').set(bearer(TOKENS.approver));
  expect(read.status, JSON.stringify(read.body)).toBe(200);
  expect(read.body).toMatchObject({ id: '..', revoked: false });
  const proposed = await request(rig.app).post('/v1/refunds').set(bearer(TOKENS.support)).send(refundBody({ payment_intent: pi, approval: '..', amount: 100 }));
  expect(proposed.status, JSON.stringify(proposed.body)).toBe(202);
  // `interlock approvals revoke ..` runs this.
  const revoked = await rig.stores.approvals.revoke('..', 'dana@support');
  expect(revoked.alreadyRevoked).toBe(false);
  expect((await rig.stores.approvals.describe('..')).snapshot).toMatchObject({ id: '..', revoked: true });
});
