// The decider's one entry point: with ANTHROPIC_API_KEY the Anthropic decider, without it the rules decider,
// so every path runs offline. Callers then judge the decision with checkDecision and propose only what it accepts.
import { createAnthropicDecider } from './anthropic.js';
import type { Decider } from './case.js';
import type { DeciderConfig } from './config.js';
import { createRulesDecider } from './rules.js';

export function createDecider(config: DeciderConfig): Decider {
  return config.apiKey === null ? createRulesDecider() : createAnthropicDecider({ ...config, apiKey: config.apiKey });
}

export { createAnthropicDecider, DeciderError } from './anthropic.js';
export { centsLeftOf, LOOKUP_TOOLS, parseCase, subjectId, type CaseApproval, type CreditDecision, type Decider, type Decision, type DecisionCase, type DeclineDecision, type LeftBy, type LookupTool, type MoneyDecision, type RefundDecision } from './case.js';
export { checkDecision, MODEL_DEVIATED, proposalDecision, proposalFields, requestIdOf, type AcceptedDecision, type DecisionCheck, type ProposalFields } from './check.js';
export { DECIDER_DEFAULTS, DEFAULT_MODEL, deciderConfigFrom, deciderEnvSchema, loadDeciderConfig, type DeciderConfig, type DeciderEnv } from './config.js';
export { cleanModelLine, cleanModelText, DECISION_TEXT_MAX_CHARS } from './model-text.js';
export { casePromptFor, DECISION_TOOLS, systemPromptFor, toolsFor, type DecisionTool } from './prompts.js';
export { createRulesDecider, decideByRules, nothingLeft, RULES_MODEL } from './rules.js';
