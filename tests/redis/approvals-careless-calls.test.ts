// Rule: an approvals call given something other than what its types say (a caller in JavaScript, a body parsed by
// hand) is refused with invalid_approval and words that say what is wrong, never a bare TypeError from reading a
// field of null or slicing a number; nothing is written.
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { termsProblems } from '../../src/core/approval.js';
import { InterlockError } from '../../src/core/errors.js';
import { createRedisApprovals, type Approvals } from '../../src/redis/approvals.js';
import { createKeys } from '../../src/redis/keys.js';
import { REDIS_URL, removePrefixes } from '../support/harness.js';

const settle = (work: () => unknown) => Promise.resolve().then(work).then(() => null, (error: unknown) => error);

const prefix = `t-careless-${process.pid}`;
let redis: Redis;
let approvals: Approvals;
beforeAll(() => {
  redis = new Redis(REDIS_URL);
  approvals = createRedisApprovals({ redis, keys: createKeys(prefix) });
});
afterAll(async () => {
  await removePrefixes([prefix]);
  await redis.quit();
});

describe('approvals called carelessly', () => {
  it('setSubjectCap with a subject that is not a string is invalid_approval, not a TypeError', async () => {
    for (const subject of [null, 123, undefined, { subject: 'payment:pi_1' }]) {
      const error = await settle(() => approvals.setSubjectCap(subject as never, 100));
      expect(error).toBeInstanceOf(InterlockError);
      expect(error).toMatchObject({ code: 'invalid_approval', message: expect.stringContaining("A cap's subject must name one payment or one customer") });
    }
  });

  it('grant with no terms object is invalid_approval, not a TypeError', async () => {
    for (const terms of [null, undefined, 'ap_1', ['ap_1']]) {
      const error = await settle(() => approvals.grant(terms as never));
      expect(error).toBeInstanceOf(InterlockError);
      expect(error).toMatchObject({ code: 'invalid_approval' });
    }
    expect(termsProblems(null as never)).toEqual(['terms must be an object']);
    expect(await redis.keys(`${prefix}:*`)).toEqual([]);
  });
});
