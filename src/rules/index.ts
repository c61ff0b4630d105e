export { type BlockedSender, BlocklistService } from './blocklist-service.ts';
export { type ExplainInput, explainRouting, type RoutingExplanation } from './routing-explain.ts';
export { RuleEvaluator } from './rule-evaluator.ts';
export { type ConditionResult, type MessageFacts, messageFacts, type RuleOutcome } from './rule-matcher.ts';
export {
  CONDITION_NAMES,
  type Rule,
  type RuleAction,
  type RuleConditions,
  VERDICT_WORDS,
} from './rule-model.ts';
export { MAX_RULES_PER_ACCOUNT, type RuleCheck, type RuleInput, RulesService } from './rules-service.ts';
export { EXAMINED_CHARS, TEXT_OPERATORS } from './text-pattern.ts';
