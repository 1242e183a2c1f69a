// Rule: a 4xx names what is wrong, bounded: one problem per field is enough to refuse a body (the project's own
// duplicate-member report stops at MAX_REPORTED = 10, src/core/json-text.ts). A body the API refuses must not make it
// write an error answer many times larger than the body (here a 250 KB body of unknown members), to any token.
import request from 'supertest';
import { expect, it } from 'vitest';
import { bearer, rigSuite, TOKENS } from './rig.js';

const rig = rigSuite();

it('a body of thousands of unknown members is refused with an answer no larger than the body', async () => {
  const members: string[] = [];
  for (let i = 0, size = 2; size < 250_000; i += 1) {
    const member = `"${i.toString(36)}":0`;
    members.push(member);
    size += member.length + 1;
  }
  const body = `{${members.join(',')}}`;
  const answer = await request(rig.app).post('/v1/refunds').set(bearer(TOKENS.support)).set('Content-Type', 'application/json').send(body);
  expect(answer.status).toBe(400);
  expect(answer.body.error.code).toBe('invalid_request');
  expect({ bodyBytes: body.length, answerBytes: answer.text.length, fields: answer.body.error.fields.length }).toEqual({ bodyBytes: body.length, answerBytes: expect.toSatisfy((n: number) => n <= body.length), fields: expect.toSatisfy((n: number) => n <= 100) });
  // The first problems, and how many more there were.
  expect(answer.body.error.message).toMatch(/; and \d+ more\)\. Nothing was recorded\.$/);
});
