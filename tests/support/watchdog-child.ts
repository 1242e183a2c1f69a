// The child of the send-watchdog tests: arms the watchdog as WATCHDOG_CASE says, then freezes its event loop for
// FREEZE_MS. It prints "frozen" before the freeze and "survived" after; the watchdog's SIGKILL stops it in between.
import { performance } from 'node:perf_hooks';
import { createSendWatchdog, SLOTS_PER_BLOCK } from '../../src/gate/send-watchdog.js';

const watchdog = createSendWatchdog({ graceMs: 50 });
const soon = () => performance.now() + 400;
const never = () => performance.now() + 3_600_000;

switch (process.env.WATCHDOG_CASE) {
  case 'stalled':
    watchdog.arm(soon());
    break;
  case 'disarmed':
    watchdog.arm(soon())();
    break;
  case 'beyond-first-block':
    // Every slot of the first block taken by sends with time to spare; the stalled one is in the second block.
    for (let i = 0; i < SLOTS_PER_BLOCK; i += 1) watchdog.arm(never());
    watchdog.arm(soon());
    break;
  case 'disarmed-twice': {
    // A send's disarm called twice must not free its slot twice: two later sends would share it, and the one
    // that finishes would unwatch the one still stalled.
    const disarm = watchdog.arm(never());
    disarm();
    disarm();
    watchdog.arm(soon());
    watchdog.arm(never())();
    break;
  }
  default:
    throw new Error(`unknown WATCHDOG_CASE ${process.env.WATCHDOG_CASE}`);
}
// Let the watchdog thread start and receive any block before the freeze (a real send takes longer than this).
await new Promise((resolve) => setTimeout(resolve, 200));
process.stdout.write('frozen\n');
const until = Date.now() + Number(process.env.FREEZE_MS ?? 3_000);
while (Date.now() < until) {
  // No timer, abort or I/O of this thread runs until this ends.
}
process.stdout.write('survived\n');
await watchdog.close();
