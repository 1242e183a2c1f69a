// Rule: an INTERLOCK_API_TOKENS entry written token-first (token:role:name) is refused whatever the secret's length
// (tokens are taken from 16 characters), never loaded with the secret as the caller's name (logged on every request,
// written into receipts) and the name as a guessable bearer token; the refusal names the entry by position only. Real
// entries still load: a name is taken for a secret only when it reads as random characters AND its token reads as
// words (a name such as support-automation), so names like support-automation, dana@support, ops, billing_bot_2 or
// ZendeskSupportBotProd2024 load with any generated token.
import { describe, expect, it } from 'vitest';
import { loadTokenRegistry } from '../../webhooks/api/tokens.js';

function refusal(spec: string): string {
  try {
    loadTokenRegistry(spec);
  } catch (error) {
    return (error as Error).message;
  }
  throw new Error('expected a refusal');
}

describe('INTERLOCK_API_TOKENS written token-first with a short secret', () => {
  it.each([
    ['24 hex digits (openssl rand -hex 12)', '9f3c2a7b1e8d4c6a0b5f7e2d', 'support-automation'],
    ['16 hex digits', 'a1b2c3d4e5f60718', 'billing_bot_automation'],
    ['24 base64 characters (openssl rand -base64 18)', 'q7Zk2LmX9vRt4NbW8sJd0Pfh', 'support.desk.automation'],
    ['20 base64url characters', 'Xk9_q2LmZ7vRt4NbW8sJ', 'SupportAutomation'],
    ['a letters-only name as the token', 'Q3vX9kLm2ZpR7tYw', 'supportautomation'],
  ])('%s written where the name goes is refused by position, without the secret', (_, secret, name) => {
    const message = refusal(`sam:support:itk_sam_token_0123456789,${secret}:support:${name}`);
    expect(message).toContain('INTERLOCK_API_TOKENS, entry 2: the name looks like a token');
    expect(message).toContain('an entry is name:role:token, in that order');
    expect(message).not.toContain(secret);
  });

  it.each([
    ['support-automation', '9f3c2a7b1e8d4c6a0b5f7e2d'],
    ['dana@support', 'q7Zk2LmX9vRt4NbW8sJd0Pfh'],
    ['ops', 'a1b2c3d4e5f60718'],
    ['billing_bot_2', 'Xk9_q2LmZ7vRt4NbW8sJ'],
    ['ZendeskSupportBotProd2024', 'Zq8vN3xLkP2mR7tY9wB4cD6fG1hJ5sA0eUvWx_-kQ3o'],
    ['Support-Automation-Bot-V2-EU1', '9f3c2a7b1e8d4c6a0b5f7e2d'],
    // A random-looking name loads too while its token is no word: only the two together read as token-first.
    ['svc_3fA9kL2mN8pQ4rS6tU0vWxYz', 'q7Zk2LmX9vRt4NbW8sJd0Pfh'],
    ['a1b2c3d4e5f60718', 'Xk9_q2LmZ7vRt4NbW8sJ'],
  ])('the name %s loads with a generated token', (name, token) => {
    expect(loadTokenRegistry(`${name}:support:${token}`).callers()).toEqual([{ name, role: 'support' }]);
  });
});
