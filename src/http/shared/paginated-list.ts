import { type Static, type TObject, type TProperties, type TSchema, Type } from 'typebox';
import type { Page } from '../../core/index.ts';
import { pageInfo, pagination } from '../pagination.ts';
import { errorResponses, Pagination, PaginationQuery } from '../schemas.ts';
import type { Api, Tags } from './api.ts';

export interface PaginatedListOptions<Key extends string, Item extends TSchema, Filters extends TProperties, Row> {
  path: string;
  tags: Tags;
  summary: string;
  description?: string;
  /** Query parameters besides `limit` and `offset`. */
  filters?: Filters;
  /** The member of the answer that holds the items, beside `pagination`. */
  key: Key;
  item: Item;
  list(accountId: string, page: { limit: number; offset: number }, query: Static<TObject<Filters>>): Promise<Page<Row>>;
  /** A service's item in its answer shape. */
  present(row: Row): Static<Item>;
}

/**
 * A `GET` of one page of the account's items with the spec's `limit`/`offset` bounds, answered as
 * `{ [key]: items, pagination }`.
 */
export function paginatedListRoute<Key extends string, Item extends TSchema, Filters extends TProperties, Row>(
  app: Api,
  options: PaginatedListOptions<Key, Item, Filters, Row>,
) {
  const { path, tags, summary, description, filters, key, item, list, present } = options;
  // Widened: the items' type is checked where `list` is given; TypeScript cannot follow a computed member here.
  const answer: TSchema = Type.Object({ [key]: Type.Array(item), pagination: Pagination });
  app.get(
    path,
    {
      schema: {
        tags,
        summary,
        description,
        querystring: Type.Object({ ...PaginationQuery, ...filters }),
        response: { 200: answer, ...errorResponses },
      },
    },
    async (request) => {
      const page = pagination(request.query);
      const { items, total } = await list(request.account.id, page, request.query as Static<TObject<Filters>>);
      // One argument each: map's index must not reach a presenter with an optional second parameter.
      return { [key]: items.map((row) => present(row)), pagination: pageInfo(page, total, items.length) };
    },
  );
}
