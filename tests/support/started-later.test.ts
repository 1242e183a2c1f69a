// Rule: a suite's stand-in (startedLater, behind casesSuite and rigSuite) used before its suite started what it
// stands for throws naming that, so a file that reads its rig at its top fails saying why, not on an undefined; once
// started, it reads, writes and answers `in` on the started value itself.
import { describe, expect, it } from 'vitest';
import { startedLater } from './started-later.js';

type Started = { port: number; readonly doubled: number };

const NOT_YET = "the test rig is used before its suite started it (in a test or hook, not at a file's top)";

describe('a stand-in for what a suite starts', () => {
  it('refuses a read, a write and `in` before the suite started it, naming what it stands for', () => {
    const rig = startedLater<Started>('test rig', () => undefined);
    expect(() => rig.port).toThrow(NOT_YET);
    expect(() => {
      rig.port = 1;
    }).toThrow(NOT_YET);
    expect(() => 'port' in rig).toThrow(NOT_YET);
  });

  it('reads, writes and answers `in` on the started value once there is one', () => {
    const suite: { started?: Started } = {};
    const rig = startedLater<Started>('test rig', () => suite.started);
    expect(() => rig.port).toThrow(NOT_YET);
    const started: Started = {
      port: 1,
      get doubled() {
        return this.port * 2;
      },
    };
    suite.started = started;
    expect(rig.port).toBe(1);
    rig.port = 21;
    expect(started.port).toBe(21);
    expect(rig.doubled).toBe(42);
    expect('port' in rig).toBe(true);
    expect('close' in rig).toBe(false);
  });
});
