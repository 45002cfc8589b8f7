/**
 * Classifying failures: faults of the machinery (the database went away, a simulated crash) are told apart from
 * failures of the agent, with the error shapes node-postgres, pg-pool, drizzle and PGlite really produce.
 */
import { DrizzleQueryError } from 'drizzle-orm';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { AgentloomError, isInfrastructureError } from '../../src/core/errors.js';

/** An error as node-postgres builds it from a server ErrorResponse. */
function databaseError(code: string, message = 'server error'): pg.DatabaseError {
  const err = new pg.DatabaseError(message, message.length, 'error');
  err.code = code;
  err.severity = 'FATAL';
  return err;
}

/** A socket error as Node raises it when a connection to the server fails. */
function socketError(code: string): NodeJS.ErrnoException {
  return Object.assign(new Error(`connect ${code} 127.0.0.1:5432`), {
    code,
    errno: -111,
    syscall: 'connect',
  });
}

/** Wraps `err` `levels` times, alternating drizzle's wrapper and a plain `{ cause }`. */
function wrapped(err: unknown, levels: number): unknown {
  let out = err;
  for (let i = 0; i < levels; i++) {
    out =
      i % 2 === 0
        ? new DrizzleQueryError('select 1', [], out as Error)
        : new Error('lookup failed', { cause: out });
  }
  return out;
}

const infrastructure: Record<string, unknown> = {
  'admin shutdown 57P01': databaseError('57P01', 'terminating connection due to administrator command'),
  'crash shutdown 57P02': databaseError('57P02'),
  'cannot connect now 57P03': databaseError('57P03', 'the database system is starting up'),
  'connection failure 08006': databaseError('08006'),
  'connection does not exist 08003': databaseError('08003'),
  'too many connections 53300': databaseError('53300', 'sorry, too many clients already'),
  'disk full 53100': databaseError('53100'),
  'serialization failure 40001': databaseError('40001'),
  'deadlock 40P01': databaseError('40P01'),
  ECONNRESET: socketError('ECONNRESET'),
  ECONNREFUSED: socketError('ECONNREFUSED'),
  EPIPE: socketError('EPIPE'),
  ETIMEDOUT: socketError('ETIMEDOUT'),
  EHOSTUNREACH: socketError('EHOSTUNREACH'),
  ENOTFOUND: socketError('ENOTFOUND'),
  EAI_AGAIN: socketError('EAI_AGAIN'),
  'a plain object with a code': { code: '57P01' },
  'connection terminated unexpectedly': new Error('Connection terminated unexpectedly'),
  'connection terminated': new Error('Connection terminated'),
  'client not queryable after an error': new Error(
    'Client has encountered a connection error and is not queryable',
  ),
  'client closed': new Error('Client was closed and is not queryable'),
  'pool connect timeout': new Error('timeout exceeded when trying to connect'),
  'PGlite closed': new Error('PGlite is closed'),
  'retryable INTERNAL': new AgentloomError('INTERNAL', 'store unavailable', { retryable: true }),
  'simulated crash': Object.assign(new Error('simulated crash'), { crash: true }),
  'a crash as a bare object': { crash: true },
};

const notInfrastructure: Record<string, unknown> = {
  'unique violation 23505': databaseError('23505', 'duplicate key value violates unique constraint'),
  'syntax error 42601': databaseError('42601'),
  'query canceled 57014': databaseError('57014'),
  TypeError: new TypeError("Cannot read properties of undefined (reading 'x')"),
  MODEL_ERROR: new AgentloomError('MODEL_ERROR', 'model call failed', { retryable: true }),
  'non-retryable INTERNAL': new AgentloomError('INTERNAL', 'a bug'),
  FENCED: new AgentloomError('FENCED', 'lease lost'),
  'a stored error read back': { code: 'INTERNAL', message: 'Connection terminated unexpectedly' },
  'a message that only mentions a connection': new Error('Connection terminated unexpectedly, try again'),
  'a string': 'ECONNRESET',
  null: null,
  undefined,
  'crash: "yes"': { crash: 'yes' },
};

describe('isInfrastructureError', () => {
  for (const [name, err] of Object.entries(infrastructure)) {
    it(`is true for ${name}, bare and wrapped 1 to 3 levels deep`, () => {
      for (const levels of [0, 1, 2, 3]) expect(isInfrastructureError(wrapped(err, levels))).toBe(true);
    });
  }

  for (const [name, err] of Object.entries(notInfrastructure)) {
    it(`is false for ${name}, bare and wrapped 1 to 3 levels deep`, () => {
      for (const levels of [0, 1, 2, 3]) expect(isInfrastructureError(wrapped(err, levels))).toBe(false);
    });
  }

  it('looks into AggregateError members (a connect to every address of a host failed)', () => {
    const both = new AggregateError([socketError('ECONNREFUSED'), socketError('ECONNREFUSED')], 'connect');
    expect(isInfrastructureError(both)).toBe(true);
    expect(isInfrastructureError(new Error('x', { cause: new AggregateError([new TypeError('a')]) }))).toBe(
      false,
    );
    const mixed = new AggregateError([new TypeError('a'), databaseError('57P01')]);
    expect(isInfrastructureError(new Error('step failed', { cause: mixed }))).toBe(true);
  });

  it('finds a database error under a non-retryable INTERNAL, but not under a MODEL_ERROR or TOOL_ERROR', () => {
    const lost = databaseError('57P01');
    expect(isInfrastructureError(new AgentloomError('INTERNAL', 'x', { cause: lost }))).toBe(true);
    // These codes are a classification already made by the code that raised them.
    expect(isInfrastructureError(new AgentloomError('MODEL_ERROR', 'x', { cause: lost }))).toBe(false);
    expect(isInfrastructureError(new AgentloomError('TOOL_ERROR', 'x', { cause: lost }))).toBe(false);
  });

  it("does not blame the database for a tool's or model's failed HTTP call (fetch failed)", () => {
    const fetchFailed = new TypeError('fetch failed', { cause: socketError('ECONNREFUSED') });
    expect(isInfrastructureError(fetchFailed)).toBe(false);
    expect(isInfrastructureError(new Error('weather lookup failed', { cause: fetchFailed }))).toBe(false);
  });

  it('stops at the depth limit and on cycles', () => {
    expect(isInfrastructureError(wrapped(databaseError('57P01'), 8))).toBe(true);
    expect(isInfrastructureError(wrapped(databaseError('57P01'), 9))).toBe(false);
    const a = new Error('a');
    const b = new Error('b', { cause: a });
    (a as { cause?: unknown }).cause = b;
    expect(isInfrastructureError(a)).toBe(false);
  });
});
