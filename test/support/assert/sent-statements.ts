/**
 * Every statement this test process's pg clients send, as lower-cased text (a hook on pg's client, removed when
 * the process exits): for tests that count what a run costs the database, without timing anything.
 */
import pg from 'pg';

/** A statement sent, and whether its connection was inside an explicit transaction (after BEGIN) when it was. */
export interface SentStatement {
  text: string;
  inTransaction: boolean;
}

/** Calls `onSend` with each statement any pg client of this process sends, before it is sent. */
function hookSends(onSend: (client: pg.Client, text: string) => void): void {
  const original = pg.Client.prototype.query;
  pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
    const first = args[0] as string | { text?: string } | undefined;
    const text = typeof first === 'string' ? first : first?.text;
    if (text) onSend(this, text.trim().toLowerCase());
    return (original as (...a: unknown[]) => unknown).apply(this, args);
  } as typeof pg.Client.prototype.query;
  process.on('exit', () => {
    pg.Client.prototype.query = original;
  });
}

/** Starts recording; the returned array fills as statements are sent (empty it to start a window). */
export function recordSentStatements(): string[] {
  const sent: string[] = [];
  hookSends((_, text) => sent.push(text));
  return sent;
}

/** As {@link recordSentStatements}, with whether each statement ran inside an explicit transaction. */
export function recordSentWithTransactions(): SentStatement[] {
  const sent: SentStatement[] = [];
  const open = new WeakSet<pg.Client>();
  hookSends((client, text) => {
    if (text === 'begin') open.add(client);
    sent.push({ text, inTransaction: open.has(client) });
    if (text === 'commit' || text === 'rollback') open.delete(client);
  });
  return sent;
}
