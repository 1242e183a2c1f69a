// Stripe's error envelope. The SDK picks its error class from the HTTP status and `error.type`
// (stripe-facts §1.1), so every refusal here names both.
export const errorTypes = [
  'api_error',
  'card_error',
  'idempotency_error',
  'invalid_request_error',
  'rate_limit_error',
  'authentication_error',
] as const;
export type ErrorType = (typeof errorTypes)[number];

export interface ErrorFields {
  type: ErrorType;
  message: string;
  code?: string;
  param?: string;
  decline_code?: string;
  charge?: string;
  payment_intent?: unknown;
}

export class SandboxError extends Error {
  constructor(
    readonly status: number,
    readonly fields: ErrorFields,
  ) {
    super(fields.message);
    this.name = 'SandboxError';
  }
}

export interface ErrorBody {
  error: ErrorFields & { doc_url?: string; request_log_url: string };
}

export function errorBody(error: SandboxError, requestId: string): ErrorBody {
  const { code } = error.fields;
  return {
    error: {
      ...error.fields,
      ...(code === undefined ? {} : { doc_url: `https://stripe.com/docs/error-codes/${code.replaceAll('_', '-')}` }),
      request_log_url: `https://dashboard.stripe.com/test/logs/${requestId}`,
    },
  };
}

interface Detail {
  code?: string;
  param?: string;
}

export function invalidRequest(message: string, detail: Detail = {}, status = 400): SandboxError {
  return new SandboxError(status, { type: 'invalid_request_error', message, ...detail });
}

/** `label` is how Stripe names the type in the message: `charge`, `payment_intent`, `dispute`. */
export function resourceMissing(label: string, id: string, param = 'id'): SandboxError {
  return invalidRequest(`No such ${label}: '${id}'`, { code: 'resource_missing', param }, 404);
}

export function parameterUnknown(param: string): SandboxError {
  return invalidRequest(`Received unknown parameter: ${param}`, { code: 'parameter_unknown', param });
}

export function parameterMissing(param: string): SandboxError {
  return invalidRequest(`Missing required param: ${param}.`, { code: 'parameter_missing', param });
}

export function parameterInvalid(param: string, message: string, code?: string): SandboxError {
  return invalidRequest(message, code === undefined ? { param } : { code, param });
}

/** Reads an object from its collection or throws Stripe's 404 for it. */
export function requireObject<T>(collection: { get(id: string): T | undefined }, label: string, id: string, param = 'id'): T {
  const found = collection.get(id);
  if (found === undefined) throw resourceMissing(label, id, param);
  return found;
}
