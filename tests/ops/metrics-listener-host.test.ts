// Rule: the tokenless INTERLOCK_METRICS_ADDR listener is protected only by the address it binds, so it answers only a
// request addressed to an IP address (v4, or v6 in brackets), localhost, or a name listed in INTERLOCK_METRICS_HOSTS;
// any other Host is a web page's own name rebound to the listener's address (DNS rebinding) and gets 421 Misdirected
// Request with a sentence naming the setting, never the metrics. A request with no Host (HTTP/1.0) is answered: no
// browser sends one.
import { connect } from 'node:net';
import type { AddressInfo } from 'node:net';
import { readFileSync } from 'node:fs';
import { pino } from 'pino';
import request from 'supertest';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { loadConfig } from '../../src/config.js';
import { metricsApp } from '../../webhooks/app.js';

const metrics = { render: async () => ({ contentType: 'text/plain; version=0.0.4', text: 'interlock_queue_jobs{queue="effects",state="waiting"} 1234\n' }) };
const silent = pino({ level: 'silent' });

describe('the metrics listener and the Host it is addressed by', () => {
  it('answers an IP address or localhost, at any port', async () => {
    const app = metricsApp(metrics, silent);
    for (const host of ['127.0.0.1:9464', '10.0.3.7:9464', '127.0.0.1', '[::1]:9464', '[::ffff:127.0.0.1]:9464', 'localhost:9464', 'LOCALHOST', 'localhost.:9464']) {
      const answer = await request(app).get('/metrics').set('Host', host);
      expect([host, answer.status]).toEqual([host, 200]);
      expect(answer.text).toContain('interlock_queue_jobs');
    }
  });

  it('answers 421 to a name it was not given, on every path, saying which setting admits a name', async () => {
    const app = metricsApp(metrics, silent, { checks: () => [] });
    for (const path of ['/metrics', '/readyz', '/healthz', '/nothing']) {
      const answer = await request(app).get(path).set('Host', 'evil.example:9464').set('Origin', 'http://evil.example:9464');
      expect([path, answer.status]).toEqual([path, 421]);
      expect(answer.text).not.toContain('interlock_queue_jobs');
      expect(answer.text).toMatch(/^[^\n]*INTERLOCK_METRICS_HOSTS[^\n]*\n$/);
    }
    for (const host of ['127.0.0.1.evil.example', 'localhost.evil.example:9464', 'evil.localhost', '[evil.example]:9464', '::1', ':9464']) {
      expect([host, (await request(app).get('/metrics').set('Host', host)).status]).toEqual([host, 421]);
    }
  });

  it('answers a name listed in INTERLOCK_METRICS_HOSTS, as a scraper on a compose network addresses it', async () => {
    const { metricsHosts } = loadConfig({ INTERLOCK_METRICS_HOSTS: ' worker , Metrics.Internal ,' });
    expect(metricsHosts).toEqual(['worker', 'Metrics.Internal']);
    const app = metricsApp(metrics, silent, { checks: () => null, hosts: metricsHosts });
    expect((await request(app).get('/metrics').set('Host', 'worker:9464')).status).toBe(200);
    expect((await request(app).get('/metrics').set('Host', 'metrics.internal:9464')).status).toBe(200);
    expect((await request(app).get('/metrics').set('Host', 'workers:9464')).status).toBe(421);
  });

  it("the compose file's worker admits its service name, so a static target worker:9464 is scraped", async () => {
    const compose = parse(readFileSync(new URL('../../docker-compose.yml', import.meta.url), 'utf8'), { merge: true }) as { services: Record<string, { environment?: Record<string, string> }> };
    const hosts = compose.services.worker?.environment?.INTERLOCK_METRICS_HOSTS;
    expect(hosts).toBeDefined();
    const app = metricsApp(metrics, silent, { checks: () => null, hosts: loadConfig({ INTERLOCK_METRICS_HOSTS: hosts }).metricsHosts });
    expect((await request(app).get('/metrics').set('Host', 'worker:9464')).status).toBe(200);
  });

  it('refuses a setting that is no host name, quoting it', () => {
    for (const value of ['worker:9464', 'http://worker', 'two words']) {
      expect(() => loadConfig({ INTERLOCK_METRICS_HOSTS: value })).toThrow(`INTERLOCK_METRICS_HOSTS: ${JSON.stringify(value)} is not a host name`);
    }
    expect(loadConfig({}).metricsHosts).toEqual([]);
  });

  it('answers an HTTP/1.0 request that has no Host', async () => {
    const server = metricsApp(metrics, silent).listen(0, '127.0.0.1');
    await new Promise<void>((resolve) => server.once('listening', () => resolve()));
    try {
      const { port } = server.address() as AddressInfo;
      const raw = await new Promise<string>((resolve, reject) => {
        const socket = connect(port, '127.0.0.1', () => socket.end('GET /metrics HTTP/1.0\r\n\r\n'));
        let text = '';
        socket.setEncoding('utf8').on('data', (chunk: string) => (text += chunk)).on('end', () => resolve(text)).on('error', reject);
      });
      expect(raw).toMatch(/^HTTP\/1\.1 200 /);
      expect(raw).toContain('interlock_queue_jobs');
    } finally {
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
});
