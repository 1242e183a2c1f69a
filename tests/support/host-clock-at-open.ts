// A fresh process that opens its stores and does nothing else with Redis (a webhooks-only process before any delivery
// or scrape): it prints this host's offset from Redis's clock once one is known, or null if none is after 5 s.
import { hostClockOffset, loadConfig, openStores } from '../../src/interlock.js';

const stores = await openStores({ ...loadConfig(), keyPrefix: process.env.INTERLOCK_KEY_PREFIX ?? 'host-clock-at-open', logLevel: 'silent', unsafeDurability: true });
let offset = hostClockOffset();
for (let tries = 0; offset === null && tries < 100; tries += 1) {
  await new Promise((resolve) => setTimeout(resolve, 50));
  offset = hostClockOffset();
}
process.stdout.write(`${JSON.stringify(offset)}\n`);
await stores.close();
