/**
 * Chaos: 50 invocations of a nested workflow over three workers while a killer SIGKILLs a random
 * worker about every 2 s and starts a new one. All complete; the tool's ledger (keyed by idempotency key) has
 * exactly one key per stored tool response and none without one, no stored call ran again, and model calls
 * exceed stored model events by at most the number of kills.
 */
import { describe, expect, it } from 'vitest';
import { fileServices } from '../../support/processes/cluster.js';
import { expectChaosGuarantees, runChaosOnWorkers } from './chaos-workload.js';

const { options, engine, db } = await fileServices();

describe('distributed chaos: workers SIGKILLed', () => {
  it('completes 50 nested runs with exactly-once tool effects while workers are killed every ~2 s', async () => {
    const { result } = await runChaosOnWorkers(options, {
      engine,
      engineDb: db,
      ledgerDb: db,
      tag: 'kill',
      killEveryMs: 2_000,
      minKills: 2,
    });
    expect(result.kills.length).toBeGreaterThanOrEqual(2);
    expectChaosGuarantees(result);
  });
});
