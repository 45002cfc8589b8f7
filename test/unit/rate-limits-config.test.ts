/** Rate limits of model calls given badly: every error names the field and says what to write. */
import { describe, expect, it } from 'vitest';
import { AgentloomError } from '../../src/core/errors.js';
import { createEngine } from '../../src/index.js';
import { rateLimitsOfEnv } from '../../src/engine/create-engine.js';

async function errorOf(work: () => unknown): Promise<AgentloomError> {
  try {
    await work();
  } catch (err) {
    expect(err).toBeInstanceOf(AgentloomError);
    return err as AgentloomError;
  }
  throw new Error('expected an error');
}

describe('rate limits configuration', () => {
  it('AGENTLOOM_RATE_LIMITS: JSON checked like createEngine rateLimits', async () => {
    expect(rateLimitsOfEnv(undefined)).toBeUndefined();
    expect(rateLimitsOfEnv('{"openai":{"requestsPerMinute":60,"perApp":{"concurrency":2}}}')).toEqual({
      openai: { requestsPerMinute: 60, perApp: { concurrency: 2 } },
    });
    const notJson = await errorOf(() => rateLimitsOfEnv('openai=60'));
    expect(notJson.details?.field).toBe('AGENTLOOM_RATE_LIMITS');
    expect(notJson.message).toContain('requestsPerMinute');
    const bad = await errorOf(() => rateLimitsOfEnv('{"m":{"concurrency":0}}'));
    expect(bad.details?.field).toBe('AGENTLOOM_RATE_LIMITS["m"].concurrency');
    expect(bad.message).toContain('must be an integer ≥ 1');
  });

  it('createEngine refuses bad rateLimits before opening anything', async () => {
    const err = await errorOf(() =>
      createEngine({ apps: [], database: { pglite: 'memory' }, rateLimits: { m: { rpm: 60 } as never } }),
    );
    expect(err.details?.field).toBe('rateLimits["m"].rpm');
    expect(err.message).toContain('use requestsPerMinute, tokensPerMinute, concurrency or perApp');
  });
});
