// A pino destination that keeps what a logger writes as parsed JSON lines, for tests that read a process's log.
import { Writable } from 'node:stream';

export function jsonLineSink<Line = Record<string, unknown>>(): { sink: Writable; lines: Line[] } {
  const lines: Line[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString('utf8').split('\n')) if (line !== '') lines.push(JSON.parse(line) as Line);
      done();
    },
  });
  return { sink, lines };
}
