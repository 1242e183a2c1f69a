// The shared_cap baselines (scenarios.md §4.4): one bot process per agent, two at once against one $30 cap.
//   cap-bot.ts no_check|hand_check|hand_lock BOT RUN_DIR PAYMENT_INTENT after_commit|before_send|none GO_AT_MS
// no_check: send under the stable key shared_cap/<run>/<bot>. hand_check: read the payment's refunds (failed ones
// dropped), stop if its own is there or if the total plus this one passes the cap, else send. hand_lock: the same
// check and send while holding an exclusive lock file shared by both bots; a lock whose holder died is taken over
// at once (the holder's pid is in the file), as the kernel frees an flock when its holder dies.
// Exactly one crash per run: the first bot to reach the crash point claims it (crash.claimed, O_EXCL).
import { closeSync, openSync, readFileSync, unlinkSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { stripeHttpFromEnv, type StripeObject } from '../stripe-http.js';
import { answer, appendLog, crashNow, readState } from './common.js';

const CAP_CENTS = 3000;
const [system, bot, given, paymentIntent, crash, goAt] = process.argv.slice(2);
const restart = process.argv.includes('--restart');
if (!['no_check', 'hand_check', 'hand_lock'].includes(system ?? '') || bot === undefined || given === undefined || paymentIntent === undefined || !['after_commit', 'before_send', 'none'].includes(crash ?? '') || goAt === undefined) {
  process.stderr.write('usage: cap-bot.ts no_check|hand_check|hand_lock BOT RUN_DIR PAYMENT_INTENT after_commit|before_send|none GO_AT_MS [--restart]\n');
  process.exit(2);
}
const dir = String(given);
const stripe = stripeHttpFromEnv();
const decision = readState<{ amount: number }>(dir, `${bot}.decision.json`);
const key = `shared_cap/${dir.split('/').at(-1) ?? ''}/${bot}`;
const events = join(dir, 'events.jsonl');
const event = (ev: string, fields: Record<string, unknown> = {}) => appendLog(events, { t: Date.now() / 1000, bot, restart, ev, ...fields });

/** True for the one bot that reaches a crash point first in this run. */
function claimCrash(point: string): boolean {
  if (crash !== point || restart) return false;
  try {
    closeSync(openSync(join(dir, 'crash.claimed'), 'wx'));
    return true;
  } catch {
    return false;
  }
}

async function send(): Promise<Record<string, unknown>> {
  if (claimCrash('before_send')) {
    event('sigkill', { at: 'before_send' });
    crashNow();
  }
  event('send');
  const refund = await stripe.post('/v1/refunds', { payment_intent: paymentIntent, amount: decision.amount, metadata: { bot, key } }, { idempotencyKey: key });
  event('committed', { refund: refund.id, replayed: refund.replayed });
  if (claimCrash('after_commit')) {
    event('sigkill', { at: 'after_commit' });
    crashNow();
  }
  return { status: refund.replayed ? 'REPLAYED_BY_STRIPE' : 'REFUNDED', refund: refund.id };
}

async function checkThenSend(): Promise<Record<string, unknown>> {
  event('check_start');
  const live = (await stripe.list('/v1/refunds', { payment_intent: paymentIntent })).filter((r: StripeObject) => r.status !== 'failed' && r.status !== 'canceled');
  const refunded = live.reduce((sum, r) => sum + Number(r.amount), 0);
  event('check_read', { refunded });
  const own = live.find((r) => (r.metadata as Record<string, unknown> | undefined)?.key === key);
  if (own !== undefined) return { status: 'FOUND_BY_LOOKUP', refund: own.id };
  if (refunded + decision.amount > CAP_CENTS) return { status: 'REFUSED:over_cap', refunded };
  return send();
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function withLock<T>(work: () => Promise<T>): Promise<T> {
  const file = join(dir, 'cap.lock');
  event('lock_wait');
  for (;;) {
    try {
      const fd = openSync(file, 'wx');
      writeSync(fd, String(process.pid));
      closeSync(fd);
      break;
    } catch {
      let holder: number;
      try {
        holder = Number(readFileSync(file, 'utf8'));
      } catch {
        continue;
      }
      if (Number.isInteger(holder) && holder > 0 && !alive(holder)) {
        try {
          unlinkSync(file);
        } catch {
          // another waiter took the dead holder's lock first
        }
        continue;
      }
      await sleep(5);
    }
  }
  event('lock_held');
  try {
    return await work();
  } finally {
    unlinkSync(file);
  }
}

const wait = Number(goAt) - Date.now();
if (!restart && wait > 0) await sleep(wait);
event('start');
const result = system === 'no_check' ? await send() : system === 'hand_check' ? await checkThenSend() : await withLock(checkThenSend);
event('done', { status: result.status });
answer(result);
