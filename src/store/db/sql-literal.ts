/**
 * A string as an SQL string literal: exactly what node-postgres's `escapeLiteral` returns (quotes doubled; with a
 * backslash, the ` E'…'` form with backslashes doubled), built with the engine's native `replaceAll` where pg
 * builds it a character at a time. A batch of step statements inlines every value this way (database.ts
 * `runBatch`); with pg's loop, a worker at saturation spent ~8% of its CPU there and as much again collecting the
 * strings it left behind.
 */
export function escapeLiteral(text: string): string {
  return text.includes('\\')
    ? ` E'${text.replaceAll('\\', '\\\\').replaceAll("'", "''")}'`
    : `'${text.replaceAll("'", "''")}'`;
}
