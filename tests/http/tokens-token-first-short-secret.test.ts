// Rule: an INTERLOCK_API_TOKENS entry written token-first (token:role:name) with a hex secret of 24 digits or more
// (`openssl rand -hex 12` and longer) beside a field no longer than it is refused, as one with a 32-character secret
// was already: never loaded with the secret as the caller's name (logged on every request, written into receipts) and
// the name as a guessable bearer token; the refusal names the entry by position only and says which rule. Real
// entries load with any token, passphrases included (k8s-refund-operator:approver:correct-horse-battery-staple), and
// a hex name (a git sha) beside a longer generated token.
// A shorter base64 secret written first is not told from a name (ZendeskSupportBotProd2024 is one): not refused.
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
    ['24 hex digits, before a name with digits in it', '9f3c2a7b1e8d4c6a0b5f7e2d', 'k8s-deployer-bot'],
    ['32 upper-case hex digits', '9F3C2A7B1E8D4C6A0B5F7E2D11AA22BB', 'SupportAutomation'],
  ])('%s written where the name goes is refused by position, without the secret', (_, secret, name) => {
    const message = refusal(`sam:support:itk_sam_token_0123456789,${secret}:support:${name}`);
    expect(message).toContain('INTERLOCK_API_TOKENS, entry 2: the name looks like a token (24 or more hex digits, or 32 or more letters, digits, _ or -, and longer than the token)');
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
    ['svc_3fA9kL2mN8pQ4rS6tU0vWxYz', 'q7Zk2LmX9vRt4NbW8sJd0Pfh'],
    ['a1b2c3d4e5f60718', 'Xk9_q2LmZ7vRt4NbW8sJ'],
    // A hex name beside a longer generated token: a git sha or an object id naming a service.
    ['507f1f77bcf86cd799439011', '9f3c2a7b1e8d4c6a0b5f7e2d11aa22bb9f3c2a7b1e8d4c6a0b5f7e2d11aa22bb'],
    ['3b18e512dba79e4c8300dd08aeb37f8e728b8dad', 'Zq8vN3xLkP2mR7tY9wB4cD6fG1hJ5sA0eUvWx_-kQ3o'],
    // Passphrase tokens: the name is judged alone.
    ['k8s-refund-operator', 'correct-horse-battery-staple'],
    ['SupportAPI-prod-bot', 'purple-monkey-dishwasher-42'],
    ['e2e-smoke-runner-ci', 'lunar-pebble-orchid-valve'],
  ])('the name %s loads with a generated token', (name, token) => {
    expect(loadTokenRegistry(`${name}:support:${token}`).callers()).toEqual([{ name, role: 'support' }]);
  });
});
