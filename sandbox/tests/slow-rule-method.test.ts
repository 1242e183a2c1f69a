// Rule: a slow rule given a method holds only requests of that method on its path, and a request of another method
// leaves it for the one it names: a test that slows a refund's create (POST /v1/refunds) must not have the slowness
// used up by a premise read of the payment's refunds (GET /v1/refunds) made first. Without a method, any request on
// the path takes it, as before.
import { describe, expect, it } from 'vitest';
import { createFaults } from '../http/faults.js';

describe('sandbox: slow rules and methods', () => {
  it('holds only the method named, and keeps the rule for it', () => {
    const faults = createFaults();
    faults.addSlow({ path: '/v1/refunds', method: 'POST', ms: 1_500, remaining: 1 });
    expect(faults.holdMs('GET', '/v1/refunds')).toBe(0);
    expect(faults.holdMs('POST', '/v1/refunds')).toBe(1_500);
    expect(faults.holdMs('POST', '/v1/refunds')).toBe(0);
  });

  it('holds any method when none is named', () => {
    const faults = createFaults();
    faults.addSlow({ path: '/v1/refunds', method: null, ms: 700, remaining: 1 });
    expect(faults.holdMs('GET', '/v1/refunds')).toBe(700);
    expect(faults.holdMs('POST', '/v1/refunds')).toBe(0);
  });
});
