// Rule: a note on an inbox action (dismiss, resolve, and a re-approval's when given) holds a character a reader can
// see: one of only spaces and characters that read as nothing (U+200B, U+2800, U+3164, the unseen characters of
// src/core/text.ts) is refused as a blank one is, 400 from the API and exit 2 from the CLI, and nothing is recorded.
// trim() kept none of them out, so a dismissal signed with an invisible note was recorded.
import request from 'supertest';
import { describe, expect, it } from 'vitest';
import { runCli } from '../cli/run-cli.js';
import { inboxSuite } from './inbox-items.js';
import { bearer, TOKENS } from './rig.js';

const { rig, make } = inboxSuite();
const INVISIBLE = ['\u200B', '\u2800', '\u3164', ' \u200B\u00A0\u2800 \n'];

describe('an inbox note nobody can read', () => {
  it('is refused by every action of the API, and the item stays open', async () => {
    const { pi, item } = await make.stale();
    const approval = await make.grant(pi);
    for (const note of INVISIBLE) {
      const answers = [
        await request(rig.app).post(`/v1/inbox/${item}/dismiss`).set(bearer(TOKENS.approver)).send({ note }),
        await request(rig.app).post(`/v1/inbox/${item}/resolve`).set(bearer(TOKENS.approver)).send({ note, resolution: 'did_not_land' }),
        await request(rig.app).post(`/v1/inbox/${item}/reapprove`).set(bearer(TOKENS.approver)).send({ note, approval }),
      ];
      expect(answers.map((answer) => [answer.status, answer.body.error?.fields?.[0]?.path]), JSON.stringify(note)).toEqual([
        [400, 'note'],
        [400, 'note'],
        [400, 'note'],
      ]);
    }
    expect((await request(rig.app).get(`/v1/inbox/${item}`).set(bearer(TOKENS.approver))).body.status).toBe('open');
    // A note with one visible character among the invisible ones is a note.
    expect((await request(rig.app).post(`/v1/inbox/${item}/dismiss`).set(bearer(TOKENS.approver)).send({ note: '\u200Bok\u200B' })).status).toBe(200);
  });

  it('is refused by the CLI as bad input before anything is read or recorded', { timeout: 60_000 }, async () => {
    const item = `stale_premise:${'a'.repeat(64)}`;
    for (const args of [
      ['inbox', 'dismiss', item, '--note', '\u200B', '--by', 'kim'],
      ['inbox', 'resolve', item, '--did-not-land', '--note', '\u3164', '--by', 'kim'],
      ['inbox', 'reapprove', item, '--approval', 'ap_x', '--note', '\u2800', '--by', 'kim'],
    ]) {
      const run = await runCli(args, { REDIS_URL: 'redis://127.0.0.1:1' });
      expect({ code: run.code, stdout: run.stdout }, run.stderr).toEqual({ code: 2, stdout: '' });
      expect(run.stderr).toContain('--note');
      expect(run.stderr).toContain('a reader can see');
    }
  });
});
