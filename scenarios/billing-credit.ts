import type { Runner } from './run.js';
export const runBillingCredit: Runner = async () => { throw new Error('todo'); };
