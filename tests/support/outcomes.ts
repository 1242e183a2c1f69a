// Which outcome codes the test run actually produced. Every gate a test builds goes through `recorded`, which
// appends each answer's code, tagged with where it came from (submit or recovery), to a file per test process;
// the global teardown (outcome-coverage.ts) then requires every code of DESIGN §4 from its own source. Coverage
// comes from outcomes produced, not from test titles.
import { appendFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Gate } from '../../src/gate/gate.js';

export const OUTCOME_LOG_ENV = 'INTERLOCK_OUTCOME_LOG_DIR';

export function recordOutcome(source: 'submit' | 'recover', outcome: string): void {
  const dir = process.env[OUTCOME_LOG_ENV];
  if (!dir) return;
  // UNRESOLVED:<error> is one code whatever the error.
  const code = outcome.startsWith('UNRESOLVED:') ? 'UNRESOLVED:<error>' : outcome;
  appendFileSync(join(dir, `${process.pid}.log`), `${source} ${code}\n`);
}

/** The gate, with every answer it gives recorded. */
export function recorded(gate: Gate): Gate {
  return {
    ...gate,
    async submit(input) {
      const answer = await gate.submit(input);
      recordOutcome('submit', answer.outcome);
      return answer;
    },
    async recover(options) {
      const report = await gate.recover(options);
      for (const item of report.settled) recordOutcome('recover', item.outcome);
      for (const item of report.unresolved) recordOutcome('recover', item.outcome);
      return report;
    },
  };
}
