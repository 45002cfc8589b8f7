/**
 * Durations as people write them (`30d`, `12h`, `90m`, `1.5 hours`), for `agentloom prune --older-than`,
 * `AGENTLOOM_RETENTION` and `createEngine({ retention })`. Parsed by `ms`; a bare number is refused (is `30`
 * minutes or days?), so every duration names its unit.
 */
import ms from 'ms';
import { AgentloomError } from '../core/errors.js';

/** Milliseconds in `text`; throws VALIDATION naming `field` and the accepted forms when it is not a duration. */
export function parseDuration(text: string, field: string): number {
  const trimmed = text.trim();
  const value = /[a-z]/i.test(trimmed) ? ms(trimmed as ms.StringValue) : undefined;
  if (value === undefined || !Number.isFinite(value) || value <= 0) {
    throw new AgentloomError(
      'VALIDATION',
      `${field}: "${text}" is not a duration; write a number and a unit, e.g. 30d, 12h, 90m or 45s`,
      { details: { field } },
    );
  }
  return value;
}
