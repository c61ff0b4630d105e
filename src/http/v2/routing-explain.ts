import { Type } from 'typebox';
import { emptyBodyAsObject } from '../empty-body.ts';
import { errorResponses } from '../schemas.ts';
import type { HttpServices } from '../server.ts';
import type { Api, Tags } from '../shared/api.ts';
import { RoutingExplanationSchema } from '../shared/presenters/rules.ts';

export function explainRouting(
  app: Api,
  { tags, explainRouting: explain }: { tags: Tags; explainRouting: HttpServices['explainRouting'] },
) {
  app.post(
    '/routing/explain',
    {
      schema: {
        tags,
        summary: 'Explain how a recipient would be routed (dry run)',
        description:
          'Whether SMTP would accept the recipient (and its reply if not), how routing matched it, which rules and ' +
          'blocklist entry would apply to mail with the given sender, subject and headers, and which endpoint would ' +
          'get it. Nothing is sent or stored. Verdict and hasAttachment conditions do not hold in a dry run.',
        body: Type.Object({
          recipient: Type.Optional(Type.String()),
          from: Type.Optional(Type.String()),
          subject: Type.Optional(Type.String()),
          headers: Type.Optional(Type.Record(Type.String(), Type.String())),
        }),
        response: { 200: RoutingExplanationSchema, ...errorResponses },
      },
      preValidation: emptyBodyAsObject,
    },
    async (request) => explain(request.account.id, request.body),
  );
}
