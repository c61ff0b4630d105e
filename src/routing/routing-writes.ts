import {
  AliasNode,
  ColumnNode,
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
 * The columns routing reads, by table: the same as the triggers of migrations 0014, 0018 (SQLite) and 0023
 * (PostgreSQL) watch. Inserts and deletes always count; updates only when they set one of these.
 */
const ROUTING_COLUMNS = new Map<string, ReadonlySet<string>>([
  [
    'domains',
    new Set([
      'id',
      'account_id',
      'domain',
      'status',
      'is_catch_all_enabled',
      'catch_all_endpoint_id',
      'receive_dmarc_emails',
      'include_subdomains',
    ]),
  ],
  ['email_addresses', new Set(['id', 'account_id', 'domain_id', 'address', 'endpoint_id', 'webhook_id', 'is_active'])],
  ['endpoints', new Set(['id', 'account_id', 'type', 'is_active'])],
  ['webhooks', new Set(['id', 'account_id', 'is_active'])],
  // Deleting an account cascades to every table above.
  ['accounts', new Set()],
]);

/** The table a statement names, without its alias; undefined for anything else (a subquery, raw SQL). */
function tableName(node: OperationNode | undefined): string | undefined {
  if (node && AliasNode.is(node)) return tableName(node.node);
  return node && TableNode.is(node) ? node.table.identifier.name : undefined;
}

/** Whether the statement inserts into, deletes from or updates a routing column of a table routing reads. */
function changesRouting(node: RootOperationNode): boolean {
  switch (node.kind) {
    case 'InsertQueryNode': {
      const table = tableName(node.into) ?? '';
      return table !== 'accounts' && ROUTING_COLUMNS.has(table);
    }
    case 'DeleteQueryNode':
      return node.from.froms.some((from) => ROUTING_COLUMNS.has(tableName(from) ?? ''));
    case 'UpdateQueryNode': {
      const columns = ROUTING_COLUMNS.get(tableName(node.table) ?? '');
      return (node.updates ?? []).some(
        ({ column }) => columns !== undefined && ColumnNode.is(column) && columns.has(column.column.name),
      );
    }
    default:
      return false;
  }
}

/**
 * Sees each statement this process runs through Kysely that changes what routing reads, and tells its listener once
 * the statement has run. On PostgreSQL other processes hear of a change only when its NOTIFY arrives (migration
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
