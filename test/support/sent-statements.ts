/**
 * Every statement this test process's pg clients send, as lower-cased text (a hook on pg's client, removed when
 * the process exits): for tests that count what a run costs the database, without timing anything.
 */
import pg from 'pg';

/** Starts recording; the returned array fills as statements are sent (empty it to start a window). */
export function recordSentStatements(): string[] {
  const sent: string[] = [];
  const original = pg.Client.prototype.query;
  pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
    const first = args[0] as string | { text?: string } | undefined;
    const text = typeof first === 'string' ? first : first?.text;
    if (text) sent.push(text.trim().toLowerCase());
    return (original as (...a: unknown[]) => unknown).apply(this, args);
  } as typeof pg.Client.prototype.query;
  process.on('exit', () => {
    pg.Client.prototype.query = original;
  });
  return sent;
}
