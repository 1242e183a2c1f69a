// Rule: bodies are JSON in UTF-8; a Content-Type whose charset (as the body parser reads it) is anything else is
// 415 unsupported_media_type before the body is read, because the "no member named twice" check reads the bytes as
// UTF-8 (README "The support API"; webhooks/app.ts onlyJson). The app's CHARSET regex must agree with the parser on
// which parameter is the charset: a `charset=utf-8` inside another parameter's quoted value is not the charset.
import request from 'supertest';
import { expect, it } from 'vitest';
import { namesSomeMemberTwice } from '../../src/interlock.js';
import { approvalBody, bearer, rigSuite, TOKENS, uid } from './rig.js';

const rig = rigSuite({ worker: true });

// The parser (content-type 2.x, used by body-parser) reads charset=utf-16le here; the app's regex finds the
// `;charset=utf-8` inside the quoted value of `x` first and lets the body through.
const SMUGGLED = 'application/json; x="a;charset=utf-8"; charset=utf-16le';

it('a UTF-16 body whose charset hides behind a quoted parameter is refused 415, not read past the twice-named check', async () => {
  const paymentIntent = `pi_${uid()}`;
  rig.target.world.set(`payment:${paymentIntent}`, { chargebacks: [], refunded_by_others: 0 });
  const approval = approvalBody({ scope: `payment:${paymentIntent}`, cap_cents: 5_000 });
  expect((await request(rig.app).post('/v1/approvals').set(bearer(TOKENS.approver)).send(approval)).status).toBe(201);
  const before = await rig.effectCount();
  // The payload of tests/http/duplicate-members.test.ts: in UTF-16LE, U+3A22 is the bytes of `":`, so a UTF-8
  // reading counts 16 extra names and the counts agree; JSON.parse keeps the second amount (2000), a first-wins
  // reader (the tool that checked the body) saw 100.
  const requestId = `r-${uid()}`;
  const textWith = (n: number) => `{"request_id":"${requestId}","payment_intent":"${paymentIntent}","amount":100,"approval":"${approval.id}","decision":{"model":"m","text":"${'\u3a22'.repeat(n)}"},"amount":2000}`;
  // As many as make the UTF-8 reading's name count agree with the parsed value's member count (the app's own check).
  const n = Array.from({ length: 64 }, (_, i) => i).find((i) => !namesSomeMemberTwice(Buffer.from(textWith(i), 'utf16le').toString('utf8'), JSON.parse(textWith(i))));
  expect(n).toBeDefined();
  const twice = textWith(n ?? 0);
  const send = (contentType: string) => request(rig.app).post('/v1/refunds?wait=5').set(bearer(TOKENS.support)).set('Content-Type', contentType).serialize((raw: unknown) => raw as string).send(Buffer.from(twice, 'utf16le'));
  // Control: the same bytes with the charset said plainly are refused, as tests/http/duplicate-members.test.ts expects.
  expect((await send('application/json; charset=utf-16le')).status).toBe(415);
  const answer = await send(SMUGGLED);
  const landed = rig.target.landings.map((landing) => landing.effect.amount);
  expect({ status: answer.status, code: answer.body.error?.code, recorded: (await rig.effectCount()) - before, landed }).toEqual({ status: 415, code: 'unsupported_media_type', recorded: 0, landed: [] });
});
