// Rule: a number refused for its size is told its range, and only a fraction is told it is not whole. zod's int()
// also refuses a number past 2^53 with the "whole number" message, so an amount of 1e20 (whole, only too large) was
// told "must be a whole number of cents" beside its range, and a cap_cents of 1e20 was told only that, with no
// range at all. Every amount, cap and count of the support API, and the gate's own effect amounts, check the range
// first.
import request from 'supertest';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { EffectError, parseEffect } from '../../src/core/effects.js';
import { approvalBody, bearer, creditBody, refundBody, startRig, TOKENS, uid, type Rig } from './rig.js';

const WHOLE = 'must be a whole number of cents';
const MAX_SAFE = Number.MAX_SAFE_INTEGER;

let rig: Rig;
beforeAll(async () => {
  rig = await startRig();
});
afterAll(async () => {
  await rig?.close();
});

/** The messages a 400 gives for one field. */
function messagesOf(answer: request.Response, path: string): string[] {
  expect(answer.status, JSON.stringify(answer.body)).toBe(400);
  return (answer.body.error.fields as { path: string; message: string }[]).filter((field) => field.path === path).map((field) => field.message);
}

const post = (path: string, token: string, body: Record<string, unknown>) => request(rig.app).post(path).set(bearer(token)).send(body);

for (const amount of [1e20, 2 ** 53, MAX_SAFE, 100_000_000]) {
  it(`a refund or credit of ${amount} is told only that it is more than 99999999 cents`, async () => {
    expect(messagesOf(await post('/v1/refunds', TOKENS.support, refundBody({ amount })), 'amount')).toEqual(['must be at most 99999999 cents']);
    expect(messagesOf(await post('/v1/credits', TOKENS.support, creditBody({ amount })), 'amount')).toEqual(['must be at most 99999999 cents']);
  });
}

it('a fraction, or a number past 2^53 below zero, is told what is wrong with it alone', async () => {
  expect(messagesOf(await post('/v1/refunds', TOKENS.support, refundBody({ amount: 20.5 })), 'amount')).toEqual([WHOLE]);
  expect(messagesOf(await post('/v1/refunds', TOKENS.support, refundBody({ amount: -1e20 })), 'amount')).toEqual(['must be more than zero cents']);
});

it("the gate's own effect amount says the range for 1e20, not that it is not whole", () => {
  let thrown: unknown;
  try {
    parseEffect({ kind: 'refund', paymentIntent: 'pi_1', amount: 1e20 });
  } catch (error) {
    thrown = error;
  }
  expect(thrown).toBeInstanceOf(EffectError);
  expect((thrown as EffectError).fields).toEqual([{ path: 'effect.amount', message: 'must be at most 99999999 cents' }]);
});

for (const cap of [1e20, 2 ** 53]) {
  it(`an approval's cap_cents of ${cap} is told its upper bound, not that it is not whole`, async () => {
    expect(messagesOf(await post('/v1/approvals', TOKENS.approver, approvalBody({ cap_cents: cap })), 'cap_cents')).toEqual([`must be at most ${MAX_SAFE} cents`]);
  });

  it(`a subject cap of ${cap} is told its upper bound, not that it is not whole`, async () => {
    const answer = await request(rig.app).put(`/v1/caps/payment:pi_${uid()}`).set(bearer(TOKENS.approver)).send({ cap_cents: cap });
    expect(messagesOf(answer, 'cap_cents')).toEqual([`must be at most ${MAX_SAFE} cents`]);
  });
}

it('a fractional cap is told only that it is not whole; the largest whole cap is granted', async () => {
  expect(messagesOf(await post('/v1/approvals', TOKENS.approver, approvalBody({ cap_cents: 50.5 })), 'cap_cents')).toEqual([WHOLE]);
  expect((await post('/v1/approvals', TOKENS.approver, approvalBody({ cap_cents: MAX_SAFE }))).status).toBe(201);
});

it("an approval's max_uses and expires_in past 2^53 are told their range, not that they are not whole", async () => {
  const answer = await post('/v1/approvals', TOKENS.approver, approvalBody({ max_uses: 1e20, expires_in: 1e20 }));
  expect(messagesOf(answer, 'max_uses')).toEqual([expect.stringMatching(/^must be at most \d+$/)]);
  expect(messagesOf(answer, 'expires_in')).toEqual([expect.stringMatching(/^must be at most \d+ seconds$/)]);
});
