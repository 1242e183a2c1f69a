// The OpenAPI 3.1 document, generated from the route definitions and the zod schemas that validate requests. OpenAPI
// 3.1's Schema Object is JSON Schema 2020-12, which zod 4 writes itself (z.toJSONSchema): no converter package,
// nothing to install, and no second description of a field that could drift from the one that validates it.
// Schemas with an id (`.meta({ id })`) become components; the parameters of paths and queries are their schemas'
// properties. Refinements (e.g. "no control characters") are checked by zod but have no JSON Schema form: each is
// said in its field's description instead (schemas.ts).
import { z } from 'zod';
import { FAILED_SIGN_INS } from '../ui/failed-sign-ins.js';
import { PERMISSIONS } from './auth.js';
import type { ResponseDoc, Route } from './route.js';
import { errorAnswer } from './schemas.js';

type JsonSchema = Record<string, unknown>;

const OPTIONS = { target: 'draft-2020-12', io: 'input', unrepresentable: 'any' } as const;

function clean(schema: JsonSchema): JsonSchema {
  const { $schema: _schema, $id: _id, ...rest } = schema;
  return rest;
}

function schemaOf(schema: z.ZodType): JsonSchema {
  const id = z.globalRegistry.get(schema)?.id;
  if (typeof id === 'string') return { $ref: `#/components/schemas/${id}` };
  return clean(z.toJSONSchema(schema, OPTIONS) as JsonSchema);
}

/**
 * What every operation may answer whatever its own responses say: a fault of the service (errors.ts asApiError: any
 * error the registry does not name), and on a route that takes a token, the 401 and 429 `authenticate` answers before
 * it runs (in its words, whatever a route's own said: only `authenticate` answers them) and the 404 a request carrying
 * a Stripe-Signature gets before that.
 */
const FAULT: ResponseDoc = { description: 'A fault of the service (`internal`): the message is a sentence with the request id, under which the service log holds the detail; nothing else of the fault is said.', schema: errorAnswer };
const UNAUTHENTICATED: ResponseDoc = { description: 'No bearer token, an unknown one, or an Authorization header not of the form `Bearer <token>` (`unauthenticated`).', schema: errorAnswer };

const RATE_LIMITED: ResponseDoc = {
  description:
    `Too many requests (\`rate_limited\`; Retry-After gives the seconds to wait): the token's rate limit was reached, or this client's address has sent too many tokens this service does not know (${FAILED_SIGN_INS.burst}, then ${FAILED_SIGN_INS.perMinute} a minute, counted together with the page's sign-ins), and until it may try again no token it sends is checked, a right one neither, unless that token authenticated from the same address before (the last ${FAILED_SIGN_INS.known} tokens that did are checked as always).`,
  schema: errorAnswer,
};

/** What a request carrying a Stripe-Signature is answered on a route that takes a token, before the token is asked for (app.ts stripeEventElsewhere). */
const STRIPE_EVENT_HERE = 'A request carrying a Stripe-Signature header (`not_found`): Stripe\'s events are taken at POST /webhooks/stripe only, and the message names the `stripe listen --forward-to` line to use.';

function responsesOf(route: Route): Record<number, ResponseDoc> {
  if (route.permission === null) return { ...route.responses, 500: route.responses[500] ?? FAULT };
  // The 401 and the 429 in `authenticate`'s words, whatever a route's own said: only it answers them.
  const own404 = route.responses[404];
  const notFound: ResponseDoc = own404 === undefined ? { description: STRIPE_EVENT_HERE, schema: errorAnswer } : { ...own404, description: `${own404.description} Also: ${STRIPE_EVENT_HERE}` };
  return { ...route.responses, 401: UNAUTHENTICATED, 404: notFound, 429: RATE_LIMITED, 500: route.responses[500] ?? FAULT };
}

function parameters(schema: z.ZodType | undefined, where: 'path' | 'query'): JsonSchema[] {
  if (!(schema instanceof z.ZodObject)) return [];
  return Object.entries(schema.shape as Record<string, z.ZodType>).map(([name, property]) => {
    const { description, ...rest } = clean(z.toJSONSchema(property, OPTIONS) as JsonSchema);
    return { name, in: where, required: where === 'path' || !property.safeParse(undefined).success, schema: rest, ...(typeof description === 'string' ? { description } : {}) };
  });
}

export function buildOpenApi(routes: readonly Route[]): JsonSchema {
  const components = (z.toJSONSchema(z.globalRegistry, { ...OPTIONS, uri: (id: string) => `#/components/schemas/${id}` }) as { schemas: Record<string, JsonSchema> }).schemas;
  const schemas = Object.fromEntries(Object.entries(components).map(([id, schema]) => [id, clean(schema)]));
  const paths: Record<string, Record<string, unknown>> = {};
  for (const route of routes) {
    const path = route.path.replace(/:([A-Za-z_]+)/g, '{$1}');
    const roles = route.permission === null ? [] : PERMISSIONS[route.permission];
    paths[path] ??= {};
    paths[path][route.method] = {
      operationId: route.operationId,
      summary: route.summary,
      ...(route.permission === null ? { security: [] } : { security: [{ bearer: [] }], description: `Roles: ${roles.join(', ')}.`, 'x-roles': roles }),
      parameters: [...parameters(route.params, 'path'), ...parameters(route.query, 'query')],
      ...(route.body ? { requestBody: { required: !route.optionalBody, content: { 'application/json': { schema: schemaOf(route.body) } } } } : {}),
      responses: Object.fromEntries(
        Object.entries(responsesOf(route)).map(([status, doc]) => [status, { description: doc.description, ...(doc.schema ? { content: { 'application/json': { schema: schemaOf(doc.schema) } } } : {}) }]),
      ),
    };
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'Interlock for Stripe: support API',
      version: 'v1',
      description: 'Propose refunds and credits through the gate (at most once per approved request, on fresh premises, under a live approval, with a signed receipt), read effects and receipts, manage approvals and caps.',
    },
    jsonSchemaDialect: 'https://json-schema.org/draft/2020-12/schema',
    servers: [{ url: '/' }],
    components: { schemas, securitySchemes: { bearer: { type: 'http', scheme: 'bearer', description: 'A token from INTERLOCK_API_TOKENS (name:role:token).' } } },
    paths,
  };
}
