import type { Runner } from './run.js';
export const runSharedCap: Runner = async () => { throw new Error('todo'); };
