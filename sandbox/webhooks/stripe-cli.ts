// `stripe listen` against the sandbox (stripe-cli.md §3, §5). The CLI opens a session with
// `POST /v1/stripecli/sessions`, dials the returned `websocket_url` with the `Websocket-Id` header, and from then on
// the sandbox pushes every event of the account as `webhook_event` frames, signed in `http_headers` with the
// session's secret. The CLI acks each frame (`event_ack`) before it filters and forwards, then reports what the
// local endpoint answered (`webhook_response`). Each open session is a webhook target of the ordinary delivery
// engine, so the delivery rules (duplicate, delay, hold, drop, reorder) and the delivery list cover it too.
//
// Session life: created ──first socket──▶ a delivery target ──socket closes──▶ waiting for the re-dial (events
// queue, un-acked frames are resent) ──no socket for `cliSessionExpiresAfterMs`, or "Connection Done"──▶ expired.
// An expired (or unknown) id is refused at the upgrade with Stripe's `Unknown WebSocket ID.`, which makes the CLI
// open a new session; the secret belongs to the CLI (API key and device name), so it survives that too.
import { WebSocketServer } from 'ws';
import { API_VERSION } from '../core/event-bus.js';
import { newId, newWebhookSecret } from '../core/ids.js';
import { shownUrl } from '../core/log.js';
import { accepted, str, strList } from '../core/params.js';
import { route } from '../http/router.js';
import { signatureHeader } from './signature.js';
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import type { WebSocket } from 'ws';
import type { Core } from '../core/core.js';
import type { Route } from '../http/router.js';
import type { DeliveryTransport, ForwardedResponse, SignedDelivery, TransportOutcome, WebhookDelivery, WebhookTarget } from './delivery.js';

/** The account every session subscribes to; the sandbox models one. */
export const SANDBOX_ACCOUNT = 'acct_1SandboxInterlock';
export const CLI_SUBPROTOCOL = 'stripecli-devproxy-v1';
const UNKNOWN_ID_BODY = JSON.stringify({ error: { message: 'Unknown WebSocket ID.' } });
/** The CLI sends this close reason when it quits (Ctrl-C, SIGTERM); its periodic re-dial says `Resetting the connection`. */
const QUITTING = 'Connection Done';

export interface CliSessionView {
  websocket_id: string;
  device_name: string;
  features: string[];
  forward_to_url: string | null;
  connected: boolean;
  /** How many sockets the CLI has opened on this session: 1 plus its re-dials. */
  connections: number;
  expired: boolean;
}

interface Frame {
  webhookId: string;
  conversationId: string;
  apiVersion: string | null;
  acked: boolean;
}

interface Send {
  request: SignedDelivery;
  frames: Frame[];
  resolve(outcome: TransportOutcome): void;
  timer: NodeJS.Timeout | null;
  /** Its listener on the world's reset signal, taken off when the send ends (one per send would pile up until a reset). */
  onReset: (() => void) | null;
}

interface Session {
  id: string;
  deviceName: string;
  features: string[];
  forwardTo: string | null;
  secret: string;
  socket: WebSocket | null;
  connections: number;
  expired: boolean;
  expiry: NodeJS.Timeout | null;
  /** Sends waiting for their frames to be acked, in the order the delivery engine handed them over. */
  sends: Send[];
}

export interface StripeCli {
  /** `POST /v1/stripecli/sessions`. */
  routes: Route[];
  /** Delivery targets: every session that has connected and not expired. */
  targets(): WebhookTarget[];
  /** Takes the websocket upgrade of `websocket_url`; refuses an unknown id as Stripe does. */
  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void;
  sessions(): CliSessionView[];
  /** Forgets a session now (closing its socket), as when Stripe expires it; the CLI's re-dial is then refused. */
  expire(id: string): boolean;
  close(): void;
}

export interface StripeCliDeps {
  delivery: () => WebhookDelivery;
  /** The secret every CLI's sessions sign with, when set (a fixed deployment such as compose); one per CLI otherwise. */
  listenSecret?: string;
}

export function createStripeCli(core: Core, deps: StripeCliDeps): StripeCli {
  const { clock, settings, log } = core;
  const sessions = new Map<string, Session>();
  const targetsById = new Map<string, WebhookTarget>();
  // One secret per CLI (API key and device name), so a handler configured with it keeps working when the CLI
  // opens a new session after an expiry, as Stripe keeps the listen secret stable across restarts.
  const secrets = new Map<string, string>();
  const byWebhookId = new Map<string, { session: Session; send: Send; frame: Frame }>();
  // webhook_id → delivery id, kept after the ack: the CLI reports `webhook_response` only once the local endpoint
  // has replied, which may be long after.
  const responses = new Map<string, { deliveryId: string; apiVersion: string | null }>();
  const wss = new WebSocketServer({ noServer: true, handleProtocols: (offered) => (offered.has(CLI_SUBPROTOCOL) ? CLI_SUBPROTOCOL : false) });

  const frameId = (kind: 'wh' | 'wc'): string => `${clock.nowSeconds()}-${newId(kind)}`;

  const writeFrames = (session: Session, send: Send): void => {
    const socket = session.socket;
    if (socket === null || socket.readyState !== socket.OPEN) return;
    const { event, payload, headers } = send.request;
    // Signed as the frame leaves: a frame resent after a re-dial gets a fresh timestamp.
    const signed = { ...headers, 'Stripe-Signature': signatureHeader(payload, session.secret, Math.floor(clock.wallMs() / 1000)) };
    for (const frame of send.frames) {
      if (frame.acked) continue;
      socket.send(
        JSON.stringify({
          type: 'webhook_event',
          webhook_id: frame.webhookId,
          webhook_conversation_id: frame.conversationId,
          event_payload: payload,
          http_headers: signed,
          endpoint: { api_version: frame.apiVersion },
        }),
      );
    }
    log.debug({ session: session.id, event: event.id }, 'stripe listen frame sent');
  };

  const finish = (session: Session, send: Send, outcome: TransportOutcome): void => {
    if (send.timer !== null) clearTimeout(send.timer);
    if (send.onReset !== null) send.request.signal.removeEventListener('abort', send.onReset);
    session.sends = session.sends.filter((s) => s !== send);
    for (const frame of send.frames) byWebhookId.delete(frame.webhookId);
    send.resolve(outcome);
  };

  const expireSession = (session: Session, reason: string): void => {
    if (session.expired) return;
    session.expired = true;
    if (session.expiry !== null) clearTimeout(session.expiry);
    sessions.delete(session.id);
    targetsById.delete(session.id);
    for (const send of [...session.sends]) finish(session, send, { kind: 'failed', error: `stripe listen session ${reason}` });
    session.socket?.terminate();
    session.socket = null;
  };

  const transportFor = (owner: Session): DeliveryTransport => ({
    send: (request: SignedDelivery): Promise<TransportOutcome> =>
      new Promise<TransportOutcome>((resolve) => {
        if (owner.expired) {
          resolve({ kind: 'failed', error: 'stripe listen session expired' });
          return;
        }
        // Two copies, as Stripe sends: the account's default version (`api_version: null`), which the CLI
        // forwards unless `--latest`, and the latest version, which it forwards only with `--latest`.
        const conversationId = frameId('wc');
        const frames: Frame[] = [null, API_VERSION].map((apiVersion) => ({ webhookId: frameId('wh'), conversationId, apiVersion, acked: false }));
        const send: Send = { request, frames, resolve, timer: null, onReset: null };
        owner.sends.push(send);
        for (const frame of frames) {
          byWebhookId.set(frame.webhookId, { session: owner, send, frame });
          responses.set(frame.webhookId, { deliveryId: request.delivery.id, apiVersion: frame.apiVersion });
        }
        // An open socket that never acks (a frame the CLI could not parse) counts as a failed attempt. Like session
        // expiry this is a plain timer, not `clock.after`: it belongs to the transport (as a fetch timeout does)
        // and must keep running when `POST /_sandbox/reset` cancels the world's scheduled transitions.
        const armTimer = (): void => {
          send.timer = setTimeout(() => {
            if (owner.socket === null) armTimer();
            else finish(owner, send, { kind: 'failed', error: `no event_ack within ${settings.webhookTimeoutMs} ms` });
          }, settings.webhookTimeoutMs);
        };
        armTimer();
        send.onReset = () => finish(owner, send, { kind: 'failed', error: 'sandbox reset' });
        request.signal.addEventListener('abort', send.onReset, { once: true });
        writeFrames(owner, send);
      }),
  });

  const onMessage = (session: Session, data: string): void => {
    let message: unknown;
    try {
      message = JSON.parse(data);
    } catch {
      return;
    }
    if (typeof message !== 'object' || message === null) return;
    const fields = message as Record<string, unknown>;
    const pending = typeof fields['webhook_id'] === 'string' ? byWebhookId.get(fields['webhook_id']) : undefined;
    switch (fields['type']) {
      case 'event_ack': {
        if (pending === undefined || pending.session !== session) return;
        pending.frame.acked = true;
        // The default-version copy is the one a plain `stripe listen` forwards; once every copy is acked the
        // delivery is done, and the CLI never hears of it again (it does not deduplicate).
        if (pending.send.frames.every((f) => f.acked)) finish(session, pending.send, { kind: 'acked' });
        return;
      }
      case 'webhook_response': {
        const sent = responses.get(String(fields['webhook_id']));
        if (sent === undefined) return;
        const response: ForwardedResponse = {
          at: clock.wallMs(),
          endpoint_api_version: sent.apiVersion,
          // As every URL the sandbox shows: a password in it masked (shownUrl), never kept.
          forward_url: typeof fields['forward_url'] === 'string' ? shownUrl(fields['forward_url']) : '',
          status: typeof fields['status'] === 'number' ? fields['status'] : 0,
          body: typeof fields['body'] === 'string' ? fields['body'] : '',
        };
        deps.delivery().recordForwarded(sent.deliveryId, response);
        return;
      }
      default:
        return;
    }
  };

  const attach = (session: Session, socket: WebSocket): void => {
    if (session.expiry !== null) clearTimeout(session.expiry);
    session.expiry = null;
    session.socket?.terminate();
    session.socket = socket;
    session.connections += 1;
    socket.on('message', (data, isBinary) => {
      if (!isBinary) onMessage(session, data.toString());
    });
    socket.on('close', (_code, reason) => {
      if (session.socket !== socket) return;
      session.socket = null;
      if (reason.toString() === QUITTING) {
        expireSession(session, 'ended by the CLI');
        return;
      }
      session.expiry = setTimeout(() => expireSession(session, 'expired'), settings.cliSessionExpiresAfterMs);
    });
    socket.on('error', (error) => log.debug({ err: error, session: session.id }, 'stripe listen socket error'));
    // Frames that went out on the previous socket without an ack go again (never acked ones only).
    for (const send of session.sends) writeFrames(session, send);
  };

  const refuse = (socket: Duplex): void => {
    socket.end(
      `HTTP/1.1 400 Bad Request\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(UNKNOWN_ID_BODY)}\r\nConnection: close\r\n\r\n${UNKNOWN_ID_BODY}`,
    );
  };

  const routes = [
    route({
      method: 'POST',
      path: '/v1/stripecli/sessions',
      params: {
        device_name: str(),
        websocket_features: strList(),
        forward_to_url: str(),
        forward_connect_to_url: str(),
        forward_thin_to_url: str(),
        forward_thin_connect_to_url: str(),
        filters: accepted(),
      },
      handle: (params, _path, ctx) => {
        const deviceName = params.device_name ?? '';
        const identity = `${ctx.apiKey}\n${deviceName}`;
        const secret = secrets.get(identity) ?? deps.listenSecret ?? newWebhookSecret();
        secrets.set(identity, secret);
        const id = newId('cliws');
        const session: Session = {
          id,
          deviceName,
          features: params.websocket_features ?? ['webhooks'],
          // Kept only to be shown (the CLI forwards by itself): a password in it masked, as every URL the sandbox shows.
          forwardTo: params.forward_to_url == null ? null : shownUrl(params.forward_to_url),
          secret,
          socket: null,
          connections: 0,
          expired: false,
          expiry: null,
          sends: [],
        };
        sessions.set(id, session);
        targetsById.set(id, {
          id,
          url: session.forwardTo ?? `stripe listen (${deviceName})`,
          secret,
          // Filtering is the CLI's job: it asks for snapshot events and receives every one of them.
          enabledEvents: session.features.includes('webhooks') ? ['*'] : [],
          transport: transportFor(session),
        });
        // A session nobody dials (`--print-secret`) lapses like one whose CLI went away.
        session.expiry = setTimeout(() => expireSession(session, 'expired'), settings.cliSessionExpiresAfterMs);
        const host = ctx.host ?? '127.0.0.1';
        return {
          object: 'stripecli.session',
          websocket_url: `ws://${host}/subscribe/${SANDBOX_ACCOUNT}`,
          websocket_id: id,
          websocket_authorized_feature: 'webhook-payloads',
          secret,
          reconnect_delay: settings.cliReconnectDelaySeconds,
          default_version: API_VERSION,
          latest_version: API_VERSION,
          device_token: newId('cli_device'),
          display_connect_filter_warning: false,
        };
      },
    }),
  ];

  return {
    routes,
    targets: () => [...sessions.values()].filter((s) => s.connections > 0 && !s.expired).flatMap((s) => targetsById.get(s.id) ?? []),
    handleUpgrade(req, socket, head) {
      // Node takes its own 'error' listener off a socket it hands to an 'upgrade' listener: without this one a peer
      // that resets the connection (before or after the refusal) is an uncaught ECONNRESET that ends the process,
      // and with it the service that embeds the sandbox. Once `ws` owns the socket it adds its own as well.
      socket.on('error', (error) => log.debug({ err: error, url: req.url }, 'upgrade socket error'));
      const header = req.headers['websocket-id'];
      const id = Array.isArray(header) ? header[0] : header;
      const session = id === undefined ? undefined : sessions.get(id);
      const path = (req.url ?? '').split('?')[0];
      if (session === undefined || path !== `/subscribe/${SANDBOX_ACCOUNT}`) {
        refuse(socket);
        return;
      }
      wss.handleUpgrade(req, socket, head, (ws) => attach(session, ws));
    },
    sessions: () =>
      [...sessions.values()].map((s) => ({
        websocket_id: s.id,
        device_name: s.deviceName,
        features: s.features,
        forward_to_url: s.forwardTo,
        connected: s.socket !== null,
        connections: s.connections,
        expired: s.expired,
      })),
    expire(id) {
      const session = sessions.get(id);
      if (session === undefined) return false;
      expireSession(session, 'expired');
      return true;
    },
    close() {
      for (const session of [...sessions.values()]) expireSession(session, 'closed');
      wss.close();
    },
  };

}
