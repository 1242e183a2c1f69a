// A library caller's request object: its request id held privately and read through a getter of the class (not an own
// field), as tests of how a proposal's fields are read use it.
import type { refundProposal } from './harness.js';

export class RefundRequest {
  readonly #requestId: string;
  /** Reads of the request id, of every instance. */
  static reads = 0;
  agent: string;
  approval: string;
  premises: Record<string, unknown>;
  effect: Record<string, unknown>;
  constructor(plain: ReturnType<typeof refundProposal>) {
    this.#requestId = plain.requestId;
    this.agent = plain.agent;
    this.approval = plain.approval;
    this.premises = plain.premises;
    this.effect = plain.effect;
  }
  get requestId(): string {
    RefundRequest.reads += 1;
    return this.#requestId;
  }
}
