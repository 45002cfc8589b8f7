/** Logs kept for checking: a pino logger that keeps every record (fencing and zombie tests read what a step did). */
import { pino, type Logger } from 'pino';

/** A pino logger at debug level that pushes each record, parsed, onto `records`. */
export function recordingLogger(records: Record<string, unknown>[]): Logger {
  return pino({ level: 'debug' }, { write: (line: string) => records.push(JSON.parse(line)) });
}
