// The wiring `interlock alerts` tests share: the CLI rig (cliRig: the machine's Redis under a random key prefix, the
// binary's environment, the afterAll that deletes them) and an alerts store on it.
import { createAlerts, type Alerts } from '../../src/redis/alerts.js';
import { createKeys } from '../../src/redis/keys.js';
import { cliRig, type CliRig } from './cli-rig.js';

export type AlertsRig = Omit<CliRig, 'prefix'> & {
  /** The store the binary lists, its clock the wall clock. */
  alerts: Alerts;
};

/** A rig for one test file; `label` names its temporary data directory. */
export function alertsRig(label: string): AlertsRig {
  const { env, prefix, redis } = cliRig(label);
  return { env, redis, alerts: createAlerts({ redis, keys: createKeys(prefix), now: async () => Date.now() }) };
}
