import { Type } from 'typebox';
import { NotSupported } from '../../core/index.ts';
import { MAX_RULES_PER_ACCOUNT, type RulesService } from '../../rules/index.ts';
import { emptyBodyAsObject } from '../empty-body.ts';
import { ErrorBody, errorResponses, IdParams } from '../schemas.ts';
import type { Api, Tags } from '../shared/api.ts';
import { paginatedListRoute } from '../shared/paginated-list.ts';
import {
  presentRule,
  RuleActionSchema,
  RuleCheckSchema,
  RuleConditionsSchema,
  RuleSchema,
} from '../shared/presenters/rules.ts';
import { updateRoute } from '../shared/update-route.ts';

/** e2 `/guard`: Guard-style rules with explicit conditions, run at ingest in priority order (see src/rules). */

interface GuardRouteOptions {
  tags: Tags;
  rules: RulesService;
}

const ruleFields = {
  name: Type.Optional(Type.String()),
  description: Type.Optional(Type.Union([Type.Null(), Type.String()])),
  isActive: Type.Optional(Type.Boolean()),
  priority: Type.Optional(Type.Integer({ description: '0 to 1000000, lower runs first; default 100' })),
  conditions: Type.Optional(RuleConditionsSchema),
  action: Type.Optional(RuleActionSchema),
};

export function listRules(app: Api, { tags, rules }: GuardRouteOptions) {
  paginatedListRoute(app, {
    path: '/guard',
    tags,
    summary: 'List rules',
    description: 'In the order they run: by priority, then by creation.',
    key: 'data',
    item: RuleSchema,
    list: (accountId, page) => rules.list(accountId, page),
    present: presentRule,
  });
}

export function createRule(app: Api, { tags, rules }: GuardRouteOptions) {
  app.post(
    '/guard',
    {
      schema: {
        tags,
        summary: 'Create a rule',
        description:
          '`name`, `conditions` (at least one) and `action` are required. Matches combine in priority order: the ' +
          'first block or route decides where the email goes (later ones are recorded, not applied); tags accumulate. ' +
          `An account has at most ${MAX_RULES_PER_ACCOUNT} rules (403 past that).`,
        body: Type.Object(ruleFields),
        response: { 201: RuleSchema, ...errorResponses },
      },
      preValidation: emptyBodyAsObject,
    },
    async (request, reply) => reply.code(201).send(presentRule(await rules.create(request.account.id, request.body))),
  );
}

export function readRule(app: Api, { tags, rules }: GuardRouteOptions) {
  app.get(
    '/guard/:id',
    { schema: { tags, summary: 'Read a rule', params: IdParams, response: { 200: RuleSchema, ...errorResponses } } },
    async (request) => presentRule(await rules.get(request.account.id, request.params.id)),
  );
}

export function updateRule(app: Api, { tags, rules }: GuardRouteOptions) {
  updateRoute(app, {
    path: '/guard/:id',
    tags,
    summary: 'Update a rule',
    description: 'Only the fields sent change; `conditions` and `action` are replaced whole.',
    fields: ruleFields,
    item: RuleSchema,
    update: (accountId, id, changes) => rules.update(accountId, id, changes),
    present: presentRule,
  });
}

export function deleteRule(app: Api, { tags, rules }: GuardRouteOptions) {
  app.delete(
    '/guard/:id',
    {
      schema: {
        tags,
        summary: 'Delete a rule',
        description: 'Emails it matched keep their recorded matches.',
        params: IdParams,
        response: { 200: Type.Object({ success: Type.Literal(true), id: Type.String() }), ...errorResponses },
      },
    },
    async (request) => ({ success: true as const, ...(await rules.remove(request.account.id, request.params.id)) }),
  );
}

export function checkRule(app: Api, { tags, rules }: GuardRouteOptions) {
  app.post(
    '/guard/:id/check',
    {
      schema: {
        tags,
        summary: 'Check a rule against a stored email',
        description: 'Whether each of its conditions holds for the email (active or not); nothing changes.',
        params: IdParams,
        body: Type.Object({ emailId: Type.Optional(Type.String()) }),
        response: { 200: RuleCheckSchema, ...errorResponses },
      },
      preValidation: emptyBodyAsObject,
    },
    async (request) => rules.check(request.account.id, request.params.id, request.body.emailId),
  );
}

/** Inbound writes rules from a prompt with a language model; Mailroom keeps rules explicit. */
const GENERATE_NOT_SUPPORTED = 'Generating rules from a prompt is not supported: create the rule with its conditions';

export function generateRule(app: Api, { tags }: { tags: Tags }) {
  app.post(
    '/guard/generate',
    {
      schema: {
        tags,
        summary: 'Generate a rule from a prompt (not supported)',
        description: 'Always 501 with `x-should-retry: false`.',
        response: { 501: ErrorBody, ...errorResponses },
      },
    },
    async () => {
      throw new NotSupported(GENERATE_NOT_SUPPORTED);
    },
  );
}
