/**
 * A pino logger for a person at a terminal (`agentloom dev`): one short line per record on stderr —
 * `warn: message  {fields}` — instead of JSON, so the events `dev` prints on stdout stay readable.
 */
import { pino, type Logger } from 'pino';
import { LOG_REDACTION } from '../../core/log-redaction.js';

/** Fields that say nothing to someone reading the terminal. */
const HIDDEN = new Set(['level', 'time', 'msg', 'pid', 'hostname', 'component', 'err', 'reqId']);

function render(line: string): string {
  let record: Record<string, unknown>;
  try {
    record = JSON.parse(line) as Record<string, unknown>;
  } catch {
    return line;
  }
  const err = record.err as { message?: unknown } | undefined;
  const fields = Object.fromEntries(Object.entries(record).filter(([key]) => !HIDDEN.has(key)));
  const extra = Object.keys(fields).length > 0 ? `  ${JSON.stringify(fields)}` : '';
  const cause = typeof err?.message === 'string' ? `: ${err.message}` : '';
  return `${String(record.level)}: ${String(record.msg ?? '')}${cause}${extra}\n`;
}

/** A logger at `level` writing readable lines to `out` (default stderr). */
export function terminalLogger(level: string, out: NodeJS.WritableStream = process.stderr): Logger {
  return pino(
    {
      level,
      base: undefined,
      timestamp: false,
      redact: LOG_REDACTION,
      formatters: { level: (label) => ({ level: label }) },
    },
    { write: (line: string) => out.write(render(line)) },
  );
}
