// Rule: the effect page writes an exposure as its sentence (where the chargeback stands: "was lost" once it is lost,
// never "unless the dispute is won" then), with its figures beside it as recorded for whoever needs the numbers.
import { describe, expect, it } from 'vitest';
import type { Entry } from '../../src/interlock.js';
import { summaryOf } from '../../webhooks/api/effect-view.js';
import { effectPage } from '../../webhooks/ui/pages.js';

const id = 'b'.repeat(64);
const SENTENCE = 'Refund re_lost (30.00 EUR) went out and the charge was then charged back (100.00 EUR): on a charge of 100.00 EUR of which 30.00 EUR was refunded, 30.00 EUR of this refund was returned twice: the dispute du_lost was lost, so the merchant paid both.';

describe("the effect page's exposure", () => {
  it('reads as its sentence, with its figures kept beside it', () => {
    const entries: Entry[] = [];
    const exposure = { cents: 3_000, currency: 'eur', refund: 're_lost', dispute: 'du_lost', disputes: ['du_lost'], statuses: ['lost'], sentence: SENTENCE };
    const page = effectPage({
      viewer: { name: 'op', role: 'operator', csrf: 'x', sections: [] },
      summary: summaryOf(id, 'payment:pi_1', entries, null),
      detail: { journal: [], final_money: { status: 'returned' }, exposure, answer: null, answer_from: null, answer_matches_final_money: null, receipt_valid: null },
      receipt: null,
      links: { kind: 'dashboard', mode: 'test' },
      canDownload: false,
    }).text;
    expect(/<dd data-testid="exposure">([^<]*)<\/dd>/.exec(page)?.[1]).toBe(SENTENCE);
    expect(/<dd data-testid="exposure-figures"><code>([^<]*)<\/code><\/dd>/.exec(page)?.[1]).toContain('&quot;statuses&quot;:[&quot;lost&quot;]');
  });
});
