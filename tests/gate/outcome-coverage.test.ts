// The outcome-coverage rule itself (tests/support/outcome-coverage.ts): a full run fails unless every code of
// DESIGN §4 was produced by its own source, submit or recovery. This checks the checker.
import { expect, it } from 'vitest';
import { RECOVERY_OUTCOMES, SUBMIT_OUTCOMES } from '../../src/core/outcomes.js';
import { missingOutcomes, REQUIRED_OUTCOMES } from '../support/outcome-coverage.js';

it('requires every submit code from submit and every recovery code from recovery, UNRESOLVED:<error> included', () => {
  expect(REQUIRED_OUTCOMES).toHaveLength(SUBMIT_OUTCOMES.length + RECOVERY_OUTCOMES.length + 1);
  expect(missingOutcomes(REQUIRED_OUTCOMES)).toEqual([]);
  // A code produced only by the other source does not count.
  const lines = REQUIRED_OUTCOMES.filter((line) => line !== 'recover AMBIGUOUS');
  expect(missingOutcomes([...lines, 'submit AMBIGUOUS'])).toEqual(['recover AMBIGUOUS']);
  expect(missingOutcomes([])).toEqual(REQUIRED_OUTCOMES);
});
