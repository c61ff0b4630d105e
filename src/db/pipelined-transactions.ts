import pg from 'pg';

/**
 * The statements a connection in pipeline mode sends without waiting for their answers (see pipelineTransactions):
 * statements whose results nothing reads, by their text. Few, and they live as long as the process.
 */
const sentAheadStatements = new Set<string>();

/** Marks `sql` as a statement whose result nothing reads, to be sent ahead on pipelining connections. */
export function sendAhead(sql: string): void {
  sentAheadStatements.add(sql);
}

/**
 * COMMIT answered that the transaction had rolled back: a statement sent ahead of it failed with the server's error
 * (the `cause`), which aborted the transaction. Nothing of it was committed, unlike a COMMIT that failed.
 */
export class RolledBackAtCommit extends Error {
  override name = 'RolledBackAtCommit';
}

/** The answer of the statement last sent ahead, which the next statement's caller is given with its own. */
interface SentAhead {
  statement: 'begin' | 'marked';
  settled: Promise<Settled>;
}

type Settled = { error: unknown; result?: undefined } | { error?: undefined; result: pg.QueryResult };

/** What a statement sent ahead answers at once: no command tag and no row count, which are not known yet. */
const notAnsweredYet = (): pg.QueryResult => ({ command: '', rowCount: null, oid: 0, fields: [], rows: [] });

/**
 * Makes the client send a transaction's statements that nothing waits on without waiting for their answers, each
 * saving a round trip: BEGIN and the statements marked with sendAhead go with the statement after them (in ingest's
 * transaction BEGIN and the Message-ID locks with the lookup, the inserts with COMMIT). A statement sent ahead is
 * answered with the next one, whose caller gets its error. Behind an unanswered BEGIN only a SELECT is sent: anything
 * else waits for it, so that no write can run outside the transaction if BEGIN failed. The client must be in pg's
 * pipeline mode, which sends queries while others are unanswered, and its caller must wait for each statement's
 * answer before the next (as Kysely does), so that a statement that waits is sent before the next.
 */
export function pipelineTransactions(client: pg.PoolClient): void {
  const query = client.query.bind(client) as (text: string, values?: unknown) => Promise<pg.QueryResult>;
  let ahead: SentAhead | undefined;
  client.query = ((text: unknown, values?: unknown) => {
    if (typeof text !== 'string') return (query as (...args: unknown[]) => unknown)(text, values);
    const before = ahead;
    ahead = undefined;
    if (before?.statement === 'begin' && !/^select /i.test(text)) {
      return before.settled.then(({ error }) => {
        if (error) throw error;
        return query(text, values);
      });
    }
    const answer = settle(query(text, values));
    const begin = /^begin$/i.test(text);
    if (begin || sentAheadStatements.has(text)) {
      ahead = { statement: begin ? 'begin' : 'marked', settled: answeredAfter(before, answer, text) };
      return Promise.resolve(notAnsweredYet());
    }
    return answeredAfter(before, answer, text).then(({ error, result }) => {
      if (error) throw error;
      return result;
    });
  }) as typeof client.query;
}

/** The statement's answer, or the error of the one sent ahead of it (see pipelineTransactions). */
async function answeredAfter(before: SentAhead | undefined, answer: Promise<Settled>, text: string): Promise<Settled> {
  const { error } = (await before?.settled) ?? {};
  if (!error) return answer;
  await answer;
  // A ROLLBACK ends the transaction whatever failed in it.
  if (/^rollback$/i.test(text)) return answer;
  // Only the server's own error says the statement ran and failed; a lost connection leaves COMMIT's outcome unknown.
  if (before?.statement === 'marked' && /^commit$/i.test(text) && error instanceof pg.DatabaseError) {
    return { error: new RolledBackAtCommit(error.message, { cause: error }) };
  }
  return { error };
}

function settle(answer: Promise<pg.QueryResult>): Promise<Settled> {
  return answer.then(
    (result) => ({ result }),
    (error: unknown) => ({ error }),
  );
}
