import { type Static, type TObject, type TProperties, type TSchema, Type } from 'typebox';
import { pageInfo, pagination } from '../pagination.ts';
import { errorResponses, Pagination, PaginationQuery } from '../schemas.ts';
import type { Api, Tags } from './api.ts';

/** One page of a list: the items already in their answer shape, and how many there are in all. */
export interface ListPage<Item> {
  rows: Item[];
  total: number;
}

export interface PaginatedListOptions<Key extends string, Item extends TSchema, Filters extends TProperties> {
  path: string;
  tags: Tags;
  summary: string;
  description?: string;
  /** Query parameters besides `limit` and `offset`. */
  filters?: Filters;
  /** The member of the answer that holds the items, beside `pagination`. */
  key: Key;
  item: Item;
  list(
    accountId: string,
    page: { limit: number; offset: number },
    query: Static<TObject<Filters>>,
  ): Promise<ListPage<Static<Item>>>;
}

/**
 * A `GET` of one page of the account's items with the spec's `limit`/`offset` bounds, answered as
 * `{ [key]: items, pagination }`.
 */
export function paginatedListRoute<Key extends string, Item extends TSchema, Filters extends TProperties>(
  app: Api,
  options: PaginatedListOptions<Key, Item, Filters>,
) {
  const { path, tags, summary, description, filters, key, item, list } = options;
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
      const { rows, total } = await list(request.account.id, page, request.query as Static<TObject<Filters>>);
      return { [key]: rows, pagination: pageInfo(page, total, rows.length) };
    },
  );
}
