/**
 * `agentloom worker --metrics-port` as a real process on PostgreSQL + Redis: its `/metrics` is valid Prometheus
 * text exposition (parsed strictly) and, after one run, the step counter has moved and the model calls, tokens
 * and tool calls of that run are counted; `/healthz` answers; SIGTERM closes it with exit code 0.
 */
import { join, resolve } from 'node:path';
import { pino } from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { createEngine } from '../../src/index.js';
import { WorkerProcess } from '../support/processes/cluster.js';
import { parseExposition, value } from '../support/assert/prometheus-text.js';
import { createTestDatabase, testQueuePrefix, testRedisUrl } from '../support/services/services.js';
import { apps, CACHED_TOKENS, models, OUTPUT_TOKENS, PROMPT_TOKENS, tools } from './fixtures/metrics-apps.js';

const APPS_MODULE = join(resolve(import.meta.dirname), 'fixtures/metrics-apps.ts');
const databaseUrl = await createTestDatabase();
const redisUrl = testRedisUrl();
const prefix = testQueuePrefix();

// The producer: enqueues and reads, runs no step (the worker process runs them all).
const producer = await createEngine({
  apps,
  models,
  tools,
  database: databaseUrl,
  queue: { redis: redisUrl, prefix },
  worker: false,
  logger: pino({ level: 'error' }),
});
afterAll(() => producer.close());

let spawned = 0;

function spawnWorker(args: string[], extraEnv: NodeJS.ProcessEnv = {}): WorkerProcess {
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const key of ['DATABASE_URL', 'REDIS_URL', 'AGENTLOOM_APPS', 'AGENTLOOM_METRICS_PORT'])
    delete env[key];
  return new WorkerProcess(`${prefix}-metrics-${++spawned}`, ['--apps', APPS_MODULE, ...args], {
    ...env,
    DATABASE_URL: databaseUrl,
    REDIS_URL: redisUrl,
    AGENTLOOM_QUEUE_PREFIX: prefix,
    LOG_LEVEL: 'info',
    ...extraEnv,
  });
}

async function metricsUrl(worker: WorkerProcess): Promise<string> {
  await worker.waitStarted();
  const line = worker.logLines().find((l) => l.msg === 'worker metrics listening');
  expect(line, worker.tail()).toBeDefined();
  return line?.url as string;
}

async function scrape(url: string) {
  const response = await fetch(`${url}/metrics`);
  expect(response.status).toBe(200);
  expect(response.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
  return parseExposition(await response.text());
}

describe('agentloom worker --metrics-port', () => {
  it('serves Prometheus text whose step, model, token and tool counters move with a run', async () => {
    const worker = spawnWorker(['--metrics-port', '0']);
    const url = await metricsUrl(worker);

    const before = await scrape(url);
    for (const [name, type] of [
      ['agentloom_steps_total', 'counter'],
      ['agentloom_step_duration_seconds', 'histogram'],
      ['agentloom_step_jobs_total', 'counter'],
      ['agentloom_step_job_duration_seconds', 'histogram'],
      ['agentloom_step_queue_wait_seconds', 'histogram'],
      ['agentloom_step_retries_total', 'counter'],
      ['agentloom_model_calls_total', 'counter'],
      ['agentloom_model_call_duration_seconds', 'histogram'],
      ['agentloom_model_tokens_total', 'counter'],
      ['agentloom_tool_calls_total', 'counter'],
      ['agentloom_tool_call_duration_seconds', 'histogram'],
    ] as const) {
      expect(before.get(name)?.type, name).toBe(type);
    }
    const jobsBefore = value(before, 'agentloom_step_jobs_total', { outcome: 'ok' });
    const stepsBefore = value(before, 'agentloom_steps_total', { outcome: 'completed' });

    const { invocationId } = await producer.enqueue({ app: 'metered', userId: 'ops', input: 'look it up' });
    const run = await producer.wait(invocationId, { timeoutMs: 60_000 });
    expect(run).toMatchObject({ status: 'completed', output: 'looked it up' });

    const after = await scrape(url);
    const jobs = value(after, 'agentloom_step_jobs_total', { outcome: 'ok' });
    expect(jobs).toBeGreaterThan(jobsBefore);
    expect(value(after, 'agentloom_step_job_duration_seconds_count', { outcome: 'ok' })).toBe(jobs);
    expect(value(after, 'agentloom_step_queue_wait_seconds_count', {})).toBe(jobs);
    expect(value(after, 'agentloom_step_jobs_total', { outcome: 'error' })).toBe(0);
    // The run's one leaf step completed (its tool call and both model calls were inside it).
    const steps = value(after, 'agentloom_steps_total', { outcome: 'completed' });
    expect(steps - stepsBefore).toBe(1);
    expect(value(after, 'agentloom_step_duration_seconds_count', { outcome: 'completed' })).toBe(steps);
    const model = { provider: 'Acme', model: 'metered', outcome: 'ok' };
    expect(value(after, 'agentloom_model_calls_total', model)).toBe(2);
    expect(value(after, 'agentloom_model_call_duration_seconds_count', model)).toBe(2);
    expect(value(after, 'agentloom_model_tokens_total', { model: 'metered', kind: 'prompt' })).toBe(
      2 * PROMPT_TOKENS,
    );
    expect(value(after, 'agentloom_model_tokens_total', { model: 'metered', kind: 'output' })).toBe(
      2 * OUTPUT_TOKENS,
    );
    expect(
      value(after, 'agentloom_model_tokens_total', { provider: 'Acme', model: 'metered', kind: 'cached' }),
    ).toBe(2 * CACHED_TOKENS);
    expect(value(after, 'agentloom_tool_calls_total', { tool: 'lookup', outcome: 'ok' })).toBe(1);
    expect(
      value(after, 'agentloom_tool_call_duration_seconds_count', { tool: 'lookup', outcome: 'ok' }),
    ).toBe(1);

    expect((await fetch(`${url}/healthz`)).status).toBe(200);
    expect((await fetch(`${url}/nothing`)).status).toBe(404);

    worker.signal('SIGTERM');
    expect(await worker.exited).toMatchObject({ code: 0, signal: null });
    expect(worker.logLines().some((l) => l.msg === 'worker stopped')).toBe(true);
    await expect(fetch(`${url}/metrics`)).rejects.toThrow();
  });

  it('takes the port from AGENTLOOM_METRICS_PORT, and serves nothing without one', async () => {
    const withEnv = spawnWorker([], { AGENTLOOM_METRICS_PORT: '0' });
    const url = await metricsUrl(withEnv);
    expect(value(await scrape(url), 'agentloom_step_jobs_total', { outcome: 'ok' })).toBe(0);

    const without = spawnWorker([]);
    await without.waitStarted();
    expect(without.logLines().some((l) => l.msg === 'worker metrics listening')).toBe(false);
    expect(without.logLines().find((l) => l.msg === 'worker started')?.metrics).toBeUndefined();
  });

  it('refuses a bad port before starting, naming the flag', async () => {
    const worker = spawnWorker(['--metrics-port', '70000']);
    expect(await worker.exited).toMatchObject({ code: 1 });
    expect(worker.log()).toMatch(/--metrics-port \/ AGENTLOOM_METRICS_PORT must be between 0 and 65535/);
  });
});
