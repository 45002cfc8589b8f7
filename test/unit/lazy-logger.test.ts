/** A step's logger is made only when a line is logged at an enabled level, and then carries its bindings. */
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { describe, expect, it, vi } from 'vitest';
import { lazyChild } from '../../src/core/lazy-logger.js';
import { LOG_REDACTION } from '../../src/core/log-redaction.js';

function logger(level: string) {
  const lines: Record<string, unknown>[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(JSON.parse(chunk.toString()) as Record<string, unknown>);
      done();
    },
  });
  const base = pino({ level, redact: LOG_REDACTION }, stream);
  return { base, lines, child: vi.spyOn(base, 'child') };
}

describe('lazyChild', () => {
  it('makes no child for lines at a disabled level', () => {
    const { base, lines, child } = logger('warn');
    const log = lazyChild(base, { invocationId: 'i1', nodePath: 'a/b' });
    log.debug('step claimed');
    log.info({ status: 'completed' }, 'step committed');
    expect(child).not.toHaveBeenCalled();
    expect(lines).toEqual([]);
  });

  it('makes the child once, on the first enabled line, with its bindings and redaction', async () => {
    const { base, lines, child } = logger('info');
    const log = lazyChild(base, { invocationId: 'i1', nodePath: 'a/b', attempt: 2 });
    log.debug('not logged');
    expect(child).not.toHaveBeenCalled();
    log.info({ apiKey: 'sk-secret' }, 'first');
    log.warn('second');
    expect(log.isLevelEnabled('info')).toBe(true);
    expect(child).toHaveBeenCalledTimes(1);
    await new Promise((resolve) => setImmediate(resolve));
    expect(lines.map((l) => [l.msg, l.invocationId, l.nodePath, l.attempt, l.apiKey])).toEqual([
      ['first', 'i1', 'a/b', 2, '[redacted]'],
      ['second', 'i1', 'a/b', 2, undefined],
    ]);
  });
});
