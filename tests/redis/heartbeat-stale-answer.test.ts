// Rule (heartbeat.ts onAliveUntil/onBoundDropped; send.ts fence): a send is aborted only when this worker's
// heartbeat key could really lapse soon. On a healthy worker whose every beat succeeded, an older beat answered after a
// newer one (two beats in flight: the interval's and sendOnce's renewal, or an EVALSHA answered NOSCRIPT and re-sent as
// EVAL after the newer beat) must not move the bound back: the newer beat proved the key lives until its own
// sentAt + TTL. Otherwise onBoundDropped fires and the fence aborts healthy sends (and the watchdog is told a stale
// bound).
import { randomBytes } from 'node:crypto';
import { Command, Redis } from 'ioredis';
import { afterAll, expect, it } from 'vitest';
import { createHeartbeat } from '../../src/redis/heartbeat.js';
import { createKeys } from '../../src/redis/keys.js';
import { heartbeatAbortMs } from '../../src/gate/send-watchdog.js';
import { REDIS_URL, removePrefixes } from '../support/harness.js';

const prefix = `hs${randomBytes(4).toString('hex')}`;
const real = new Redis(REDIS_URL);
afterAll(async () => {
  await removePrefixes([prefix]);
  real.disconnect();
});

it('an older beat answered after a newer one does not drop the bound (no spurious abort of healthy sends)', async () => {
  const ttlMs = 2_000;
  let delayNext = 0;
  // Forwards every command at once; the reply of the first beat is handed back late (a slow answer, as after NOSCRIPT).
  const redis = new Proxy(real, {
    get(target, prop, receiver) {
      if (prop === 'sendCommand') {
        return (command: Command) => {
          const delay = delayNext;
          delayNext = 0;
          if (delay === 0) return target.sendCommand(command);
          const clone = new Command(command.name, command.args as string[], { replyEncoding: 'utf8' });
          void target.sendCommand(clone);
          clone.promise.then(
            (value) => setTimeout(() => (command as unknown as { resolve: (v: unknown) => void }).resolve(value), delay),
            (error) => (command as unknown as { reject: (e: unknown) => void }).reject(error),
          );
          return command.promise;
        };
      }
      return Reflect.get(target, prop, receiver);
    },
  }) as Redis;
  const keys = createKeys(prefix);
  const heartbeat = createHeartbeat({ redis, keys, workerId: 'W', nonce: 'boot-1', intervalMs: 60_000, ttlMs });
  await heartbeat.beat();
  let dropped = 0;
  heartbeat.onBoundDropped(() => (dropped += 1));

  delayNext = 1_900;
  const older = heartbeat.beat(); // sent now, answered ~1.9 s later
  await new Promise((resolve) => setTimeout(resolve, 1_000));
  await heartbeat.beat(); // sent 1 s later, answered at once: the key lives ~2 s from now
  await older;

  const pttl = await real.pttl(keys.heartbeat('W'));
  expect({ dropped, aliveForMs: Math.round(heartbeat.aliveFor()), abortAtMs: heartbeatAbortMs(ttlMs), keyPttlMs: pttl }).toMatchObject({ dropped: 0 });
  expect(heartbeat.aliveFor()).toBeGreaterThan(heartbeatAbortMs(ttlMs));
});
