// Rule: a case's story must tell what happened in characters a reader can see, as a note must (isVisibleNote): one of
// only spaces or characters that read as nothing (U+200B, U+2800, U+3164, U+2060) is refused at the API's body schema,
// by parseCaseSubmission and so by `interlock case` (exit 2, nothing queued), with one problem naming the rule.
import { describe, expect, it } from 'vitest';
import { BLANK_STORY, caseSubmissionOf, parseCaseSubmission } from '../../src/core/cases.js';
import { isVisibleText as isVisibleStory } from '../../src/core/text.js';
import { InterlockError } from '../../src/core/errors.js';
import { isVisibleNote } from '../../src/core/inbox.js';
import { caseBody } from '../../webhooks/api/schemas.js';
import { runCli } from '../cli/run-cli.js';

const INVISIBLE = ['\u200b', '\u2800\u2800', '\u3164', '\u200b \u2060', ' \ufeff\n', '\u00ad'];
const refund = (story: string) => ({ caseId: 'c-1', kind: 'refund', subject: 'pi_123', incident: null, story, approval: 'ap-1', agent: 'lee' });

describe('a case story a reader cannot see', () => {
  it.each(INVISIBLE)('%j is refused by the API body schema with the visible-story problem', (story) => {
    const parsed = caseBody.safeParse({ case_id: 'c-1', payment_intent: 'pi_123', story, approval: 'ap-1' });
    expect(parsed.success).toBe(false);
    expect(parsed.error?.issues.map((issue) => [issue.path.join('.'), issue.message])).toEqual([['story', BLANK_STORY]]);
  });

  it.each(INVISIBLE)('%j is refused by parseCaseSubmission and caseSubmissionOf (the CLI path): invalid_request, nothing queued', (story) => {
    expect(() => parseCaseSubmission(refund(story))).toThrow(/story: must tell what happened in characters a reader can see.*Nothing was queued\./);
    let thrown: unknown;
    try {
      caseSubmissionOf({ caseId: 'c-1', customer: 'cus_123', incident: 'inc-1', story, approval: 'ap-1', agent: 'lee' });
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(InterlockError);
    expect((thrown as InterlockError).code).toBe('invalid_request');
    expect((thrown as InterlockError).fields).toEqual([{ path: 'story', message: BLANK_STORY }]);
  });

  it('the story rule is the note rule, and a story with one visible character is taken everywhere', () => {
    for (const story of [...INVISIBLE, '', ' \t\n']) expect(isVisibleStory(story), JSON.stringify(story)).toBe(isVisibleNote(story));
    for (const story of ['The jar arrived cracked.', '\u200bx', '割れていた', '\u2800 .']) {
      expect(isVisibleStory(story)).toBe(true);
      expect(caseBody.safeParse({ case_id: 'c-1', payment_intent: 'pi_123', story, approval: 'ap-1' }).success).toBe(true);
      expect(parseCaseSubmission(refund(story)).story).toBe(story);
    }
  });

  it('a blank story, empty or white space, is refused with the same problem', () => {
    for (const story of ['', ' \n\t']) {
      const parsed = caseBody.safeParse({ case_id: 'c-1', payment_intent: 'pi_123', story, approval: 'ap-1' });
      expect(parsed.error?.issues.map((issue) => issue.message)).toEqual([BLANK_STORY]);
      expect(() => parseCaseSubmission(refund(story))).toThrow(BLANK_STORY);
    }
  });

  it('`interlock case --story` of a zero-width space exits 2 naming the rule, before any Redis is reached', { timeout: 60_000 }, async () => {
    // Nothing listens on this port: a command that got past validation would fail on Redis, not exit 2 with the rule.
    const run = await runCli(['case', '--case', 'c-1', '--payment-intent', 'pi_123', '--story', '\u200b', '--approval', 'ap-1'], { REDIS_URL: 'redis://127.0.0.1:1/0' });
    expect(run.code, run.stderr).toBe(2);
    expect(run.stderr).toContain('story: must tell what happened in characters a reader can see');
    expect(run.stderr).toContain('Nothing was queued.');
  });
});
