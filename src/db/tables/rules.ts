import type { Flag } from '../flags.ts';

/** A Guard-style rule (src/rules): conditions that must all hold, and one action. */
export interface RulesTable {
  id: string;
  account_id: string;
  name: string;
  description: string | null;
  is_active: Flag;
  /** Lower runs first. */
  priority: number;
  /** The rule's conditions object (see RuleConditions in src/rules). */
  conditions_json: string;
  action: 'block' | 'route' | 'tag';
  /** The endpoint a `route` rule sends the mail to. */
  action_endpoint_id: string | null;
  /** The tag a `tag` rule adds. */
  action_tag: string | null;
  created_at: string;
  updated_at: string;
}

/** A blocked sender: an address, or `*@domain` for every address of a domain; lower-cased. */
export interface BlockedSendersTable {
  id: string;
  account_id: string;
  email_address: string;
  created_at: string;
}
