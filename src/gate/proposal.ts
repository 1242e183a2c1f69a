// Validation of what callers submit. Bad input is refused with a message naming the field; nothing is written.
import { z } from 'zod';
import { assertJson, type Json, type JsonObject } from '../core/json.js';
import type { Decision } from '../core/entries.js';

export type Proposal = {
  requestId?: string;
  agent: string;
  approval: string;
  premises: JsonObject;
  effect: JsonObject;
  request?: Json;
  decision?: Decision;
};

const proposalSchema = z.object({
  requestId: z.string().min(1).max(500).optional(),
  agent: z.string().min(1).max(200),
  approval: z.string().min(1).max(200),
  premises: z.record(z.string(), z.unknown()),
  effect: z.record(z.string(), z.unknown()),
  request: z.unknown().optional(),
  decision: z.object({ model: z.string(), text: z.string() }).optional(),
});

export class ProposalError extends Error {
  readonly code = 'invalid_proposal';
  readonly status = 400;
  readonly retryable = false;
  constructor(message: string) {
    super(message);
    this.name = 'ProposalError';
  }
}

export function parseProposal(input: unknown): Proposal {
  const parsed = proposalSchema.safeParse(input);
  if (!parsed.success) {
    const detail = parsed.error.issues.map((issue) => `${issue.path.join('.') || 'proposal'}: ${issue.message}`).join('; ');
    throw new ProposalError(`The proposal is invalid (${detail}). A proposal needs agent, approval, premises and effect; requestId is optional.`);
  }
  try {
    const p = parsed.data;
    const proposal: Proposal = {
      agent: p.agent,
      approval: p.approval,
      premises: assertJson(p.premises, '$.premises') as JsonObject,
      effect: assertJson(p.effect, '$.effect') as JsonObject,
    };
    if (p.requestId !== undefined) proposal.requestId = p.requestId;
    if (p.request !== undefined) proposal.request = assertJson(p.request, '$.request');
    if (p.decision !== undefined) proposal.decision = p.decision;
    return proposal;
  } catch (error) {
    throw new ProposalError(`The proposal is invalid: ${error instanceof Error ? error.message : String(error)}`);
  }
}
