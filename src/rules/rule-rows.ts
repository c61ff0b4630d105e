import { fromFlag, type RulesTable } from '../db/index.ts';
import type { Rule, RuleAction } from './rule-model.ts';

function actionOf(row: RulesTable): RuleAction {
  if (row.action === 'route') return { type: 'route', endpointId: row.action_endpoint_id! };
  if (row.action === 'tag') return { type: 'tag', tag: row.action_tag! };
  return { type: 'block' };
}

export function ruleFromRow(row: RulesTable): Rule {
  return {
    id: row.id,
    accountId: row.account_id,
    name: row.name,
    description: row.description,
    isActive: fromFlag(row.is_active),
    priority: Number(row.priority),
    conditions: JSON.parse(row.conditions_json),
    action: actionOf(row),
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

/** The action's columns: its type, and the endpoint or tag it carries (null otherwise). */
export function actionColumns(action: RuleAction) {
  return {
    action: action.type,
    action_endpoint_id: action.type === 'route' ? action.endpointId : null,
    action_tag: action.type === 'tag' ? action.tag : null,
  };
}
