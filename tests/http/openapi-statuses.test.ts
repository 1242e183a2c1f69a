// RULE: every status the API answers on a route is one the OpenAPI document lists for it, and what the document says
// of a parameter is what the route does. A route that reads a JSON body answers 415 to a body of another type, 413
// past the body limit and 400 to broken JSON before its handler runs, so each such route documents all three; and
// GET /v1/alerts pages by the default `limit` its document states (100), not listQuery's 10.
import request from 'supertest';
import { beforeAll, describe, expect, it } from 'vitest';
import { createApp } from '../../webhooks/app.js';
import { bearer, rigSuite, tokenRegistry, TOKENS } from './rig.js';

type Operation = { responses: Record<string, unknown>; requestBody?: unknown; 'x-roles'?: string[] };

const rig = rigSuite();
let doc: { paths: Record<string, Record<string, Operation>> };
beforeAll(async () => {
  doc = (await request(rig.app).get('/v1/openapi.json')).body;
});

const TOKEN_OF: Record<string, string> = { support: TOKENS.support, approver: TOKENS.approver, auditor: TOKENS.auditor, operator: TOKENS.operator };
const ITEM = `stale_premise:${'a'.repeat(64)}`;
const concrete = (path: string) => path.replace('{id}', path.startsWith('/v1/inbox') ? ITEM : 'ap_x').replace('{subject}', 'payment:pi_1');

describe('statuses the document lists', () => {
  it('every route with a JSON body documents the 400, 413 and 415 it answers', async () => {
    const undocumented: string[] = [];
    let routes = 0;
    for (const [path, operations] of Object.entries(doc.paths)) {
      for (const [method, operation] of Object.entries(operations)) {
        if (operation.requestBody === undefined) continue;
        routes += 1;
        const token = bearer(TOKEN_OF[operation['x-roles']?.[0] ?? 'support'] ?? TOKENS.support);
        const url = concrete(path);
        const start = (request(rig.app) as unknown as Record<string, ((url: string) => request.Test) | undefined>)[method];
        if (start === undefined) throw new Error(`supertest has no ${method}`);
        const send = () => start(url).set(token);
        const text = await send().set('Content-Type', 'text/plain').send('x');
        const big = await send().set('Content-Type', 'application/json').send(JSON.stringify({ pad: 'x'.repeat(300 * 1024) }));
        const broken = await send().set('Content-Type', 'application/json').send('{"a":');
        expect([text.status, big.status, broken.status], `${method.toUpperCase()} ${path}`).toEqual([415, 413, 400]);
        for (const answer of [text, big, broken]) {
          if (!(String(answer.status) in operation.responses)) undocumented.push(`${method.toUpperCase()} ${path} ${answer.status} ${answer.body?.error?.code}`);
        }
      }
    }
    expect(routes).toBeGreaterThanOrEqual(10);
    expect([...new Set(undocumented)]).toEqual([]);
  });
});

describe('GET /v1/alerts: the default page size', () => {
  it('is the one the document states', async () => {
    const asked: number[] = [];
    const app = createApp({
      stores: rig.stores,
      effects: rig.queue,
      readFacts: async () => ({}),
      tokens: tokenRegistry(),
      logger: rig.stores.logger,
      alerts: async (query) => {
        asked.push(query.limit);
        return { data: [], next: null };
      },
    });
    const documented = (await request(app).get('/v1/openapi.json')).body.paths['/v1/alerts'].get.parameters.find((parameter: { name: string }) => parameter.name === 'limit');
    const stated = Number(/default (\d+)/.exec(String(documented.description))?.[1]);
    expect(stated).toBe(100);
    expect((await request(app).get('/v1/alerts').set(bearer(TOKENS.auditor))).status).toBe(200);
    expect(asked).toEqual([stated]);
    // listQuery's own limit still documents its default of 10 (GET /v1/effects).
    const effectsLimit = (await request(app).get('/v1/openapi.json')).body.paths['/v1/effects'].get.parameters.find((parameter: { name: string }) => parameter.name === 'limit');
    expect(String(effectsLimit.description)).toContain('default 10');
  });
});
