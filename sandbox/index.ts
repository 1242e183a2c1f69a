// Public entry of the Stripe sandbox: `startSandbox` runs it on a local port for tests and the CLI.
import { createServer } from 'node:http';
import { createControlClient } from './control-client.js';
import { createRequestHandler, refuseMisdirectedUpgrade } from './http/server.js';
import { shownUrl } from './core/log.js';
import { createWorld } from './world.js';
import type { AddressInfo } from 'node:net';
import type { ControlClient } from './control-client.js';
import type { WorldOptions } from './world.js';

export { createControlClient } from './control-client.js';
export type { ControlClient, DropInput, FailInput } from './control-client.js';
export type { LoggedRequest } from './http/request-log.js';
export type { DelaysMode } from './core/delays.js';
export type { Settings } from './core/core.js';
export type { Delivery, DeliveryRule, DeliveryState, ForwardedResponse, RuleAction } from './webhooks/delivery.js';
export type { CliSessionView } from './webhooks/stripe-cli.js';
export type { ApiResponseRecord } from './http/server.js';

export interface SandboxOptions extends WorldOptions {
  /** 0 picks a free port. */
  port?: number;
  /** Interface to bind; loopback by default. */
  host?: string;
}

export interface Sandbox {
  /** Base URL, e.g. `http://127.0.0.1:12111`. */
  url: string;
  host: string;
  port: number;
  /** The `--forward-to` signing secret; present only when forwarding. */
  webhookSecret?: string;
  /** Typed client for the `/_sandbox/...` control API of this instance. */
  control: ControlClient;
  /** Every Stripe API endpoint this sandbox serves (method and path pattern). */
  apiRoutes(): Array<{ method: string; path: string }>;
  close(): Promise<void>;
}

export async function startSandbox(options: SandboxOptions = {}): Promise<Sandbox> {
  const world = createWorld(options);
  const server = createServer({ keepAlive: true }, createRequestHandler(world));
  // The only websocket the sandbox serves is the one `stripe listen` dials (webhooks/stripe-cli.ts), and only at a
  // Host it answers: a page rebound to this address must not open it and read every event.
  server.on('upgrade', (req, socket, head) => {
    if (!refuseMisdirectedUpgrade(req, socket, world.allowedHosts)) world.stripeCli.handleUpgrade(req, socket, head);
  });
  const host = options.host ?? '127.0.0.1';
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 12111, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  const url = `http://${host}:${port}`;
  world.log.info({ url, forwardTo: options.forwardTo === undefined ? null : shownUrl(options.forwardTo), delays: options.delays ?? 'stripe' }, 'stripe sandbox listening');
  return {
    url,
    host,
    port,
    ...(world.forward === null ? {} : { webhookSecret: world.forward.secret }),
    control: createControlClient(url),
    apiRoutes: () => world.api.list().map((r) => ({ method: r.method, path: r.path })),
    close: () =>
      new Promise<void>((resolve) => {
        world.close();
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
