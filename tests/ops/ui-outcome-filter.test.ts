// Rule: the effects page's outcome filter, like the OpenAPI document's enum of outcomes, lists each outcome once
// (a submit and a recovery both settle COMMITTED_ON_QUERY and AMBIGUOUS), and one option is selected.
import request from 'supertest';
import { describe, expect, it } from 'vitest';
import { EFFECT_OUTCOMES } from '../../webhooks/api/schemas.js';
import { signIn } from '../http/page-sessions.js';
import { rigSuite, TOKENS } from '../http/rig.js';

const rig = rigSuite();

describe('the outcome filter', () => {
  it('lists each outcome once, with the one filtered by selected', async () => {
    expect(EFFECT_OUTCOMES).toEqual([...new Set(EFFECT_OUTCOMES)]);
    expect(EFFECT_OUTCOMES).toContain('AMBIGUOUS');
    const { cookie } = await signIn(rig.app, TOKENS.auditor);
    const page = await request(rig.app).get('/ui?outcome=AMBIGUOUS').set('Cookie', cookie);
    expect(page.status).toBe(200);
    const select = /<select id="f-outcome"[^>]*>([\s\S]*?)<\/select>/.exec(page.text)?.[1] ?? '';
    const values = [...select.matchAll(/<option value="([^"]*)"/g)].map((match) => match[1]);
    expect(values).toEqual(['', ...EFFECT_OUTCOMES]);
    expect([...select.matchAll(/<option value="([^"]*)" selected>/g)].map((match) => match[1])).toEqual(['AMBIGUOUS']);
  });
});
