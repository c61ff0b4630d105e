import { type Static, type TObject, type TProperties, type TSchema, Type } from 'typebox';
import { emptyBodyAsObject } from '../empty-body.ts';
import { errorResponses, IdParams } from '../schemas.ts';
import type { Api, Tags } from './api.ts';

export interface UpdateRouteOptions<Fields extends TProperties, Item extends TSchema, Updated> {
  /** The item's path, ending in `/:id`. */
  path: string;
  tags: Tags;
  summary: string;
  description: string;
  /** Content types besides JSON the body may come in. */
  consumes?: string[];
  fields: Fields;
  item: Item;
  update(accountId: string, id: string, body: Static<TObject<Fields>>): Promise<Updated>;
  present(updated: Updated): Static<Item>;
}

/** A `PUT` that changes only the fields sent of one of the account's items and answers the item as it now is. */
export function updateRoute<Fields extends TProperties, Item extends TSchema, Updated>(
  app: Api,
  options: UpdateRouteOptions<Fields, Item, Updated>,
) {
  const { path, tags, summary, description, consumes, fields, item, update, present } = options;
  // Widened like paginatedListRoute's answer: the body's and item's types are checked where the options are given.
  const body: TSchema = Type.Object(fields);
  const answer: TSchema = item;
  app.put(
    path,
    {
      schema: {
        tags,
        summary,
        description,
        consumes,
        params: IdParams,
        body,
        response: { 200: answer, ...errorResponses },
      },
      preValidation: emptyBodyAsObject,
    },
    async (request) =>
      present(await update(request.account.id, request.params.id, request.body as Static<TObject<Fields>>)),
  );
}
