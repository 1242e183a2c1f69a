// The scans that find a member named twice (src/core/json-text.ts) end on any text, also one that is not the JSON its
// parser read (a body the parser decoded as UTF-16 while the scan read its bytes as UTF-8, where an escaped quote reads
// as a bare one): a string left open runs to the end of the text. It used to send the scan back to the text's start,
// a loop that never ended and froze the whole service on one request. Run in a child process with a deadline, since a
// loop in this process would hang the test run rather than fail it.
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const MODULE = fileURLToPath(new URL('../../src/core/json-text.ts', import.meta.url));

function scanInChild(texts: readonly string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const program = `const { membersNamedTwice, namesSomeMemberTwice } = await import(${JSON.stringify(MODULE)});
const texts = ${JSON.stringify(texts)};
console.log(JSON.stringify(texts.map((text) => [membersNamedTwice(text).length, namesSomeMemberTwice(text, {})])));`;
  return new Promise((resolve) => {
    execFile(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', program], { timeout: 20_000 }, (error, stdout, stderr) => {
      resolve({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : null, stdout, stderr });
    });
  });
}

describe('member-name scans on text that is not the JSON the parser read', () => {
  it('end when a string is left open (an escaped quote read as a bare one), at the start, in a name or in a value', async () => {
    const texts = ['{"request_id":"a\\"b"}', '{"a":"b\\"}', '"', '{"open', '{"a":1,"b', '{"a":"\\\\\\"'];
    const run = await scanInChild(texts);
    expect(run.code, `${run.stderr}(a child killed by its 20 s deadline has no exit code: the scan did not end)`).toBe(0);
    expect(JSON.parse(run.stdout)).toHaveLength(texts.length);
  });
});
