// Rule: every field of an inbox item's `closed` is in the InboxItem schema of GET /v1/openapi.json, `unsigned` with it:
// the sentence saying no signed entry stands behind a dismissal (its effect's journal was gone), null when one does.
// The schema left `unsigned` out, so a client generated from the document dropped the one field saying a closure is
// on no receipt.
import { Ajv2020 } from 'ajv/dist/2020.js';
import request from 'supertest';
import { expect, it } from 'vitest';
import { inboxSuite } from './inbox-items.js';
import { bearer, TOKENS } from './rig.js';

const { rig, make } = inboxSuite();

type ObjectSchema = { type?: string; properties: Record<string, object> };

it("closed.unsigned is in the InboxItem schema: a string when the journal was gone, null when a signed entry stands", async () => {
  const doc = (await request(rig.app).get('/v1/openapi.json')).body;
  const ajv = new Ajv2020({ strict: false, validateFormats: false });
  for (const [id, schema] of Object.entries(doc.components.schemas)) ajv.addSchema(schema as object, `#/components/schemas/${id}`);
  const closed = (doc.components.schemas.InboxItem.properties.closed.anyOf as ObjectSchema[]).find((branch) => branch.type === 'object');
  const unsigned = closed?.properties['unsigned'] as { description?: string } | undefined;
  expect(unsigned?.description).toContain('no signed entry');

  const gone = await make.stale();
  for (const key of await rig.redis.keys(`*${gone.effectId}*`)) await rig.redis.del(key);
  const signed = await make.stale();
  for (const { item, says } of [
    { item: gone.item, says: expect.stringContaining('no signed entry') },
    { item: signed.item, says: null },
  ]) {
    const dismissed = await request(rig.app).post(`/v1/inbox/${item}/dismiss`).set(bearer(TOKENS.approver)).send({ note: 'Checked Stripe: nothing to do.' });
    expect(dismissed.status, JSON.stringify(dismissed.body)).toBe(200);
    expect(dismissed.body.closed.unsigned).toEqual(says);
    expect(Object.keys(closed?.properties ?? {})).toEqual(expect.arrayContaining(Object.keys(dismissed.body.closed)));
    expect(ajv.compile(unsigned ?? false)(dismissed.body.closed.unsigned)).toBe(true);
    expect(ajv.getSchema('#/components/schemas/InboxItem')?.(dismissed.body)).toBe(true);
  }
});
