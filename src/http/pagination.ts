import { Invalid } from '../core/index.ts';

/**
 * Applies the spec's list bounds with its exact error strings; the default limit is 50. The query schema takes any
 * integer, so an offset past what the databases bind exactly (`1e300` is an integer too) is refused here.
 */
export function pagination(query: { limit?: number; offset?: number }) {
  const limit = query.limit ?? 50;
  const offset = query.offset ?? 0;
  if (limit < 1 || limit > 100) throw new Invalid('Limit must be between 1 and 100');
  if (offset < 0) throw new Invalid('Offset must be non-negative');
  if (offset > Number.MAX_SAFE_INTEGER) throw new Invalid(`Offset must be at most ${Number.MAX_SAFE_INTEGER}`);
  return { limit, offset };
}

export function pageInfo(page: { limit: number; offset: number }, total: number, returned: number) {
  return { limit: page.limit, offset: page.offset, total, hasMore: page.offset + returned < total };
}
