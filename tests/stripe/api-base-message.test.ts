// Rule: a refusal must quote what is wrong. README configuration table: STRIPE_API_BASE is "a bare origin, no `/v1`
// path (refused at start otherwise)". Given `http://127.0.0.1:12111/v1` (the newcomer's likeliest mistake), the
// refusal must not present the bare origin `http://127.0.0.1:12111` as the offending value ("STRIPE_API_BASE
// (http://127.0.0.1:12111) must be a bare origin" reads as a contradiction); it should name the part to drop (the
// path) or offer the origin as the fix.
import { expect, it } from 'vitest';
import { readApiBase } from '../../src/stripe/settings.js';

it('STRIPE_API_BASE with a /v1 path is refused without presenting the valid origin as the bad value', () => {
  const read = readApiBase('http://127.0.0.1:12111/v1');
  expect('problem' in read).toBe(true);
  const problem = (read as { problem: string }).problem;
  // As it stands: "STRIPE_API_BASE (http://127.0.0.1:12111) must be a bare origin (scheme, host and port): ..."
  expect(problem).not.toMatch(/STRIPE_API_BASE \(http:\/\/127\.0\.0\.1:12111\) must be a bare origin/);
  expect(problem).toMatch(/\/v1|path/);
  expect(problem).toContain('STRIPE_API_BASE (http://127.0.0.1:12111/v1) has a path (/v1): use http://127.0.0.1:12111.');
});

it('names each part to drop, and quotes none that may hold a secret (credentials, query, fragment)', () => {
  const read = readApiBase('http://user:sk_live_51HsecretInUrl0123456789@127.0.0.1:12111/v1?key=sk_live_51HsecretInQuery0123456789#sk_test_51HfragmentFrag0123');
  const problem = 'problem' in read ? read.problem : '';
  expect(problem).toContain('has a path (/v1), a query, a fragment and a user or password: use http://127.0.0.1:12111.');
  expect(problem).not.toMatch(/secretIn|fragmentFrag|user:/);
});
