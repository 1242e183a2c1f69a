// `interlock sandbox`: runs the Stripe sandbox in the foreground until SIGINT or SIGTERM.
import { isDelaysMode } from './core/delays.js';
import { shownUrl } from './core/log.js';
import { InvalidArgumentError, type Command } from 'commander';
import type { SandboxOptions } from './index.js';

export interface SandboxFlags {
  port: string;
  host: string;
  forwardTo?: string;
  webhookSecret?: string;
  listenSecret?: string;
  delays: string;
  /** Only for the printed `stripe listen` line; unset, it is --forward-to's URL, else DEFAULT_LISTEN_FORWARD_TO (listenForwardTo). */
  listenForwardTo?: string;
  /** `--allowed-host`, once per name (collectAllowedHost). */
  allowedHost?: string[];
}

const DEFAULT_LISTEN_FORWARD_TO = 'http://127.0.0.1:3000/webhooks/stripe';

/**
 * Where the printed `stripe listen` line forwards: --listen-forward-to when given; else where the sandbox itself was
 * told to forward (--forward-to, the endpoint that takes its events: under compose the api's route by its service
 * name); else the route `npm start` serves on its default port.
 */
export function listenForwardTo(flags: Pick<SandboxFlags, 'forwardTo' | 'listenForwardTo'>): string {
  return flags.listenForwardTo ?? flags.forwardTo ?? DEFAULT_LISTEN_FORWARD_TO;
}

/** An API key the official Stripe CLI accepts (`sk_`, 12+ characters, three parts) and the sandbox too. */
export const CLI_API_KEY = 'sk_test_sandbox';

/**
 * The `stripe listen` command line for a sandbox at `url`, run through npx (npm ci installs the official CLI into
 * node_modules; it is not on the PATH). The CLI accepts only a loopback IP (or
 * `*.dev.stripe.me`) as `--api-base`, never `localhost` (stripe-cli.md §2), so a loopback or wildcard bind is
 * written as 127.0.0.1.
 */
export function stripeListenCommand(url: string, forwardTo: string): string {
  return `npx stripe listen --api-base ${cliApiBase(url)} --api-key ${CLI_API_KEY} --skip-update --all-snapshot --forward-to ${forwardTo}`;
}

export function stripeTriggerCommand(url: string, event: string): string {
  return `npx stripe trigger ${event} --api-base ${cliApiBase(url)} --api-key ${CLI_API_KEY}`;
}

function cliApiBase(url: string): string {
  const parsed = new URL(url);
  if (['localhost', '0.0.0.0', '[::]', '[::1]', '::', '::1'].includes(parsed.hostname)) parsed.hostname = '127.0.0.1';
  return parsed.origin;
}

const HOST_NAME = /^[A-Za-z0-9_](?:[A-Za-z0-9_-]*[A-Za-z0-9_])?(?:\.[A-Za-z0-9_](?:[A-Za-z0-9_-]*[A-Za-z0-9_])?)*\.?$/;

/** Commander's parser for the repeatable --allowed-host: a bare host name (no scheme, no port), added to the others. */
function collectAllowedHost(name: string, names: string[]): string[] {
  if (!HOST_NAME.test(name)) throw new InvalidArgumentError(`--allowed-host takes a host name without a scheme or port (e.g. sandbox), got ${JSON.stringify(name)}`);
  return [...names, name];
}

/** Declares the sandbox's flags on a command; shared by the project CLI and `server-main.ts`. */
export function withSandboxFlags(command: Command): Command {
  return command
    .option('--port <port>', 'port to listen on (0 picks a free one)', '12111')
    .option('--host <host>', 'interface to bind', '127.0.0.1')
    .option('--forward-to <url>', 'POST every event to this URL, signed, like `stripe listen --forward-to`')
    .option('--webhook-secret <secret>', 'signing secret for --forward-to (whsec_...); generated when absent')
    .option('--listen-secret <secret>', 'the secret every `stripe listen` session signs with (whsec_...); one per CLI when absent')
    .option('--delays <mode>', 'asynchronous delays: stripe (Stripe-like timings) or fast (each at most 200 ms)', 'stripe')
    .option('--listen-forward-to <url>', `the webhook URL written into the printed \`stripe listen\` command line (default: the --forward-to URL, else "${DEFAULT_LISTEN_FORWARD_TO}")`)
    .option(
      '--allowed-host <name>',
      'a host name requests may address the sandbox by (repeatable; e.g. a compose service name); it always answers IP addresses, localhost, *.localhost and *.dev.stripe.me, and any other Host gets 421',
      collectAllowedHost,
      [],
    );
}

export function sandboxOptionsFromFlags(flags: SandboxFlags): SandboxOptions {
  const port = Number(flags.port);
  // InvalidArgumentError: the command line reports a bad flag as bad input (exit 2), not as a crash.
  if (!Number.isInteger(port) || port < 0 || port > 65_535) throw new InvalidArgumentError(`--port must be an integer from 0 to 65535, got ${flags.port}`);
  if (!isDelaysMode(flags.delays)) throw new InvalidArgumentError(`--delays must be stripe or fast, got ${flags.delays}`);
  if (flags.webhookSecret !== undefined && !flags.webhookSecret.startsWith('whsec_')) throw new InvalidArgumentError('--webhook-secret must start with whsec_');
  if (flags.listenSecret !== undefined && !flags.listenSecret.startsWith('whsec_')) throw new InvalidArgumentError('--listen-secret must start with whsec_');
  return {
    port,
    host: flags.host,
    delays: flags.delays,
    ...(flags.forwardTo === undefined ? {} : { forwardTo: flags.forwardTo }),
    ...(flags.webhookSecret === undefined ? {} : { webhookSecret: flags.webhookSecret }),
    ...(flags.listenSecret === undefined ? {} : { listenSecret: flags.listenSecret }),
    ...(flags.allowedHost === undefined || flags.allowedHost.length === 0 ? {} : { allowedHosts: flags.allowedHost }),
  };
}

/** Stops the sandbox on SIGINT/SIGTERM, then lets the process exit. */
export function stopOnSignals(close: () => Promise<void>): void {
  const stop = (): void => {
    void close().then(() => process.exit(0));
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}

export function addSandboxCommand(program: Command): void {
  withSandboxFlags(program.command('sandbox').description('Run the local Stripe sandbox (a stateful stand-in for Stripe test mode)')).action(
    async (flags: SandboxFlags) => {
      // Loaded on use, so every other `interlock` command starts without the whole sandbox.
      const { startSandbox } = await import('./index.js');
      const options = sandboxOptionsFromFlags(flags);
      const sandbox = await startSandbox(options).catch((error: unknown) => {
        // A usage error, so the command ends with one line and exit 2.
        if ((error as { code?: unknown }).code === 'EADDRINUSE') throw new InvalidArgumentError(`${options.host}:${options.port} is in use by another program, so the sandbox did not start. Choose another port with --port (0 picks a free one).`);
        throw error;
      });
      stopOnSignals(sandbox.close);
      console.log(`Stripe sandbox listening on ${sandbox.url}`);
      console.log(`Point the SDK at it: new Stripe('sk_test_...', { host: '${sandbox.host}', port: ${sandbox.port}, protocol: 'http' })`);
      console.log(`Forward its events with the official Stripe CLI: ${stripeListenCommand(sandbox.url, shownUrl(listenForwardTo(flags)))}`);
      console.log(`Fire a test event: ${stripeTriggerCommand(sandbox.url, 'payment_intent.succeeded')}`);
      if (sandbox.webhookSecret !== undefined && flags.forwardTo !== undefined) {
        console.log(`Ready! Forwarding events to ${shownUrl(flags.forwardTo)}. Your webhook signing secret is ${sandbox.webhookSecret} (^C to quit)`);
      }
    },
  );
}
