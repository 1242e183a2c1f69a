// Injected slowness: holds matching POSTs after they have begun executing, so tests can observe what Stripe does
// with a second request while the first is still running (the 409 `idempotency_key_in_use`).
export interface SlowRule {
  path: string | null;
  ms: number;
  remaining: number;
}

export interface Faults {
  addSlow(rule: SlowRule): void;
  /** How long to hold this request, consuming one use of the first matching rule. */
  holdMs(path: string): number;
  clear(): void;
}

export function createFaults(): Faults {
  let rules: SlowRule[] = [];
  return {
    addSlow(rule) {
      rules.push({ ...rule });
    },
    holdMs(path) {
      const rule = rules.find((r) => r.remaining > 0 && (r.path === null || path.startsWith(r.path)));
      if (rule === undefined) return 0;
      rule.remaining -= 1;
      rules = rules.filter((r) => r.remaining > 0);
      return rule.ms;
    },
    clear() {
      rules = [];
    },
  };
}
