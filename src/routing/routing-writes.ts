import {
  AliasNode,
  type KyselyPlugin,
  type OperationNode,
  type PluginTransformQueryArgs,
  type PluginTransformResultArgs,
  type QueryResult,
  type RootOperationNode,
  TableNode,
  type UnknownRow,
} from 'kysely';

/**
 * The tables routing reads. Any insert, update or delete there counts, also of a column routing does not read (the
 * triggers of migration 0023 are finer): such writes are rare (the API, DNS checks), and dropping the decisions costs a
 * query per recipient once.
 */
const ROUTING_TABLES = new Set(['domains', 'email_addresses', 'endpoints', 'webhooks']);

/** The table a statement names, without its alias; undefined for anything else (a subquery, raw SQL). */
function tableName(node: OperationNode | undefined): string | undefined {
  if (node && AliasNode.is(node)) return tableName(node.node);
  return node && TableNode.is(node) ? node.table.identifier.name : undefined;
}

/** Whether the statement writes to a table routing reads, or deletes accounts (which cascades to those tables). */
function changesRouting(node: RootOperationNode): boolean {
  switch (node.kind) {
    case 'InsertQueryNode':
      return ROUTING_TABLES.has(tableName(node.into) ?? '');
    case 'UpdateQueryNode':
      return ROUTING_TABLES.has(tableName(node.table) ?? '');
    case 'DeleteQueryNode':
      return node.from.froms.some((from) => {
        const table = tableName(from) ?? '';
        return ROUTING_TABLES.has(table) || table === 'accounts';
      });
    default:
      return false;
  }
}

/**
 * Sees each statement this process runs through Kysely that writes to a table routing reads, and tells its listener
 * once the statement has run. On PostgreSQL other processes hear of a change only when its NOTIFY arrives (migration
 * 0023); this lets the process that made it (an API request, the DNS verification) drop its routing decisions without
 * waiting for that.
 */
export class RoutingWritesPlugin implements KyselyPlugin {
  readonly #writes = new WeakSet<object>();
  #listener: (() => void) | undefined;

  /** Sets the one listener told of each routing write. */
  onWrite(listener: () => void): void {
    this.#listener = listener;
  }

  transformQuery(args: PluginTransformQueryArgs): RootOperationNode {
    if (changesRouting(args.node)) this.#writes.add(args.queryId);
    return args.node;
  }

  async transformResult(args: PluginTransformResultArgs): Promise<QueryResult<UnknownRow>> {
    if (this.#writes.delete(args.queryId)) this.#listener?.();
    return args.result;
  }
}
