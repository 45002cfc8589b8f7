/**
 * Tracing across processes: `agentloom api` and `agentloom worker` processes on PostgreSQL and Redis export their spans
 * (OTLP/HTTP, as JSON: OTEL_EXPORTER_OTLP_PROTOCOL=http/json) to a receiver in this test.
 *
 * 1+2a. Reference 001's nested workflow (Sequential → Parallel → Loop) is ONE trace: a node span per node, parented
 *    exactly by node path, workflow types and loop iterations as attributes, model and tool spans with token usage;
 *    its last step's worker is SIGKILLed mid-step and the other worker's retry is a span with attempt 2 — spans
 *    from both workers in one trace.
 * 2b. A run paused for confirmation and answered later continues the same trace; the caller's traceparent is the
 *    root's parent.
 * 3. No prompt, instruction, tool argument or credential in any payload unless capture is on — and with it on,
 *    they are there.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort, REPO, ServerProcess } from '../../support/processes/cli.js';
import { Cluster, fileServices, openGate, type WorkerProcess } from '../../support/processes/cluster.js';
import { OtlpReceiver, type ReceivedSpan } from '../../support/wire/otlp-receiver.js';
import { waitFor } from '../../support/assert/wait-for.js';
import { apiClient, type Json } from '../../support/client/http-client.js';
import { runReaches } from '../../support/client/runs.js';
import { MARKERS, NESTED_ITERATIONS, USAGE } from '../fixtures/traced-apps.js';

const APPS = join(REPO, 'test/e2e/fixtures/traced-apps.ts');
const { options, engine, db } = await fileServices({ appsModule: APPS });
const receiver = await OtlpReceiver.start();
/** A credential in every process's environment: it must never be exported. */
const CREDENTIAL = 'sk-test-CREDENTIAL-MARKER-0b7d';
const otelEnv = (capture: boolean) => ({
  ...receiver.env(),
  OTEL_SERVICE_NAME: 'agentloom-e2e',
  OPENAI_API_KEY: CREDENTIAL,
  ...(capture ? { OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: 'true' } : {}),
});

let api: ServerProcess;
let base: string;

beforeAll(async () => {
  const port = await freePort();
  api = new ServerProcess(['api', '--port', String(port), '--apps', APPS], {
    DATABASE_URL: options.databaseUrl,
    REDIS_URL: options.redisUrl,
    AGENTLOOM_QUEUE_PREFIX: options.prefix,
    LOG_LEVEL: 'info',
    ...otelEnv(false),
  });
  await api.waitForOutput(/"msg":"api listening"/, { timeoutMs: 170_000, what: 'the api to listen' });
  base = `http://127.0.0.1:${port}`;
}, 180_000);

afterAll(async () => {
  await api?.stop('SIGTERM');
  await receiver.close();
});

interface Invocation {
  id: string;
  status: string;
  traceId: string;
  pending: { callId: string; name: string }[];
}

const http = apiClient({ base: () => base, requireOk: true });

async function start(app: string, run: string, headers: Record<string, string> = {}): Promise<string> {
  const input = { userId: 'e2e', input: `${MARKERS.prompt} go`, stateDelta: { run } };
  const res = await http('POST', `/v1/apps/${app}/invocations`, input, { headers });
  expect(res.status).toBe(202);
  return res.body.invocationId as string;
}

async function read(id: string): Promise<Invocation> {
  return (await http('GET', `/v1/invocations/${id}`)).body as Json & Invocation;
}

const until = (id: string, status: string): Promise<Invocation> =>
  runReaches(http, id, status, { timeoutMs: 90_000 }) as Promise<Json & Invocation>;

async function nodesOf(id: string): Promise<{ path: string; parent_path: string | null; kind: string }[]> {
  const { rows } = await db.query<{ path: string; parent_path: string | null; kind: string }>(
    'SELECT path, parent_path, kind FROM nodes WHERE invocation_id = $1 ORDER BY path',
    [id],
  );
  return rows;
}

/** The node spans of a trace by path, once the run's root span arrived. */
async function nodeSpans(traceId: string, root: string): Promise<Map<string, ReceivedSpan>> {
  await waitFor(() => receiver.trace(traceId).some((s) => s.name === `invoke_agent ${root}`), {
    timeoutMs: 30_000,
    intervalMs: 50,
    what: 'the root span',
  });
  const spans = receiver.trace(traceId).filter((s) => s.name.startsWith('invoke_agent '));
  return new Map(spans.map((s) => [s.attributes['agentloom.node.path'] as string, s]));
}

/** The trace as an indented tree (README "Tracing" is drawn from it): AGENTLOOM_PRINT_TRACE=1 prints it. */
function printTree(traceId: string): void {
  if (!process.env.AGENTLOOM_PRINT_TRACE) return;
  const spans = receiver.trace(traceId);
  const ids = new Set(spans.map((s) => s.spanId));
  const lines: string[] = [];
  const walk = (span: ReceivedSpan, depth: number): void => {
    const a = span.attributes;
    const notes = [
      a['agentloom.workflow.type'] && !span.name.startsWith('step ')
        ? String(a['agentloom.workflow.type'])
        : '',
      a['agentloom.loop.iteration'] !== undefined ? `iteration ${String(a['agentloom.loop.iteration'])}` : '',
      a['agentloom.attempt'] !== undefined ? `attempt ${String(a['agentloom.attempt'])}` : '',
      span.name.startsWith('step ')
        ? `pid ${String(span.resource['service.instance.id']).split(':')[1]}`
        : '',
      a['gen_ai.usage.input_tokens'] !== undefined
        ? `tokens ${String(a['gen_ai.usage.input_tokens'])}/${String(a['gen_ai.usage.output_tokens'])}`
        : '',
    ].filter(Boolean);
    lines.push(`${'  '.repeat(depth)}${span.name}${notes.length ? `  [${notes.join(', ')}]` : ''}`);
    for (const child of spans
      .filter((s) => s.parentSpanId === span.spanId)
      .sort((x, y) => x.startMs - y.startMs))
      walk(child, depth + 1);
  };
  for (const root of spans.filter((s) => !s.parentSpanId || !ids.has(s.parentSpanId))) walk(root, 0);
  console.log(`trace ${traceId}\n${lines.join('\n')}`);
}

const instanceOf = (w: WorkerProcess | undefined) => new RegExp(`:${w?.pid}:[0-9a-f]{8}$`);
const stepsOf = (traceId: string, agent: string) =>
  receiver.trace(traceId).filter((s) => s.name === `step ${agent}`);

describe('tracing across an api and two workers', () => {
  it('a nested run is one trace by node path, across a SIGKILL: the retry is attempt 2 on the other worker', async () => {
    const cluster = new Cluster(options);
    const [first] = await cluster.start(1, { env: otelEnv(false) });
    const id = await start('nested', 'nested-1');
    // Everything up to the summary runs on the first worker; the summary's model call waits for the gate.
    await waitFor(
      async () => {
        const { rows } = await db.query("SELECT 1 FROM e2e_marks WHERE name = 'model-start' AND key = $1", [
          'summary:nested-1',
        ]);
        return rows.length > 0;
      },
      { timeoutMs: 90_000, intervalMs: 100, what: 'the summary step to start' },
    );
    const { traceId } = await read(id);
    expect(traceId).toBe(id.replace(/^inv_/, '').replaceAll('-', ''));
    // Its earlier steps' spans (and their model calls') are exported (every 100 ms) before the kill.
    await waitFor(
      () =>
        stepsOf(traceId, 'looper').length === NESTED_ITERATIONS &&
        stepsOf(traceId, 'side').length === 1 &&
        receiver.trace(traceId).filter((s) => s.name === 'chat usage-model').length ===
          2 * NESTED_ITERATIONS + 1,
      { timeoutMs: 30_000, what: 'the spans of the steps before the summary' },
    );
    const [second] = await cluster.start(1, { env: otelEnv(false) });
    await first?.kill();
    await openGate(db, 'summary:nested-1');
    await until(id, 'completed');

    const nodes = await nodesOf(id);
    const byPath = await nodeSpans(traceId, 'nested');
    // The last step's span ends after its commit (which ended the run): it may come in the next export.
    await waitFor(() => stepsOf(traceId, 'summary').length > 0, {
      timeoutMs: 30_000,
      what: 'summary step span',
    });
    // A span per node, each a child of its parent node's span; the root has no parent (no caller's trace).
    expect([...byPath.keys()].sort()).toEqual(nodes.map((n) => n.path));
    expect(receiver.trace(traceId).filter((s) => s.name.startsWith('invoke_agent '))).toHaveLength(
      nodes.length,
    );
    for (const node of nodes) {
      const span = byPath.get(node.path) as ReceivedSpan;
      expect(span.parentSpanId).toBe(node.parent_path ? byPath.get(node.parent_path)?.spanId : undefined);
      expect(span.attributes).toMatchObject({
        'gen_ai.operation.name': 'invoke_agent',
        'agentloom.workflow.type': node.kind,
        'agentloom.invocation.id': id,
        'agentloom.app': 'nested',
      });
    }
    expect(byPath.get('nested')?.attributes['agentloom.workflow.type']).toBe('sequential');
    expect(byPath.get('nested/nested_fan')?.attributes['agentloom.workflow.type']).toBe('parallel');
    expect(byPath.get('nested/nested_fan/nested_loop')?.attributes).toMatchObject({
      'agentloom.workflow.type': 'loop',
      'agentloom.loop.iterations': NESTED_ITERATIONS,
    });
    const loopers = nodes.filter((n) => n.path.startsWith('nested/nested_fan/nested_loop/looper'));
    expect(loopers.map((n) => byPath.get(n.path)?.attributes['agentloom.loop.iteration'])).toEqual([0, 1]);

    // Steps: children of their node's span. The killed attempt's span is lost; its retry is attempt 2, elsewhere.
    for (const node of nodes.filter((n) => !['sequential', 'parallel', 'loop'].includes(n.kind))) {
      const steps = receiver
        .trace(traceId)
        .filter((s) => s.attributes['agentloom.node.path'] === node.path && s.name.startsWith('step '));
      expect(steps.length, node.path).toBeGreaterThan(0);
      for (const step of steps) expect(step.parentSpanId).toBe(byPath.get(node.path)?.spanId);
    }
    const [retry, ...more] = stepsOf(traceId, 'summary');
    expect(more).toHaveLength(0);
    expect(retry?.attributes['agentloom.attempt']).toBe(2);
    expect(retry?.resource['service.instance.id']).toMatch(instanceOf(second));
    expect(stepsOf(traceId, 'side')[0]?.resource['service.instance.id']).toMatch(instanceOf(first));
    expect(stepsOf(traceId, 'side')[0]?.attributes['agentloom.attempt']).toBe(1);
    expect(stepsOf(traceId, 'side')[0]?.attributes['agentloom.queue.wait_ms']).toEqual(expect.any(Number));
    expect(new Set(receiver.trace(traceId).map((s) => s.resource['service.name']))).toEqual(
      new Set(['agentloom-e2e']),
    );

    // Model and tool spans: children of a step span of this trace, with usage and call ids.
    const stepIds = new Set(
      receiver
        .trace(traceId)
        .filter((s) => s.name.startsWith('step '))
        .map((s) => s.spanId),
    );
    const chats = receiver.trace(traceId).filter((s) => s.name === 'chat usage-model');
    // looper: 2 calls per iteration; side 1; summary 1 (its killed call was never ended).
    expect(chats).toHaveLength(2 * NESTED_ITERATIONS + 2);
    for (const chat of chats) {
      expect(stepIds.has(chat.parentSpanId as string)).toBe(true);
      expect(chat.attributes).toMatchObject({
        'gen_ai.operation.name': 'chat',
        'gen_ai.provider.name': 'scripted',
        'gen_ai.request.model': 'usage-model',
        'gen_ai.usage.input_tokens': USAGE.promptTokens,
        'gen_ai.usage.output_tokens': USAGE.outputTokens,
        'gen_ai.response.finish_reasons': ['STOP'],
      });
    }
    const tools = receiver.trace(traceId).filter((s) => s.name === 'execute_tool lookup');
    expect(tools).toHaveLength(NESTED_ITERATIONS);
    for (const tool of tools) {
      expect(stepIds.has(tool.parentSpanId as string)).toBe(true);
      expect(tool.attributes).toMatchObject({
        'gen_ai.tool.name': 'lookup',
        'gen_ai.tool.call.id': expect.stringMatching(/^call_/),
      });
    }
    printTree(traceId);
    // Nothing of this run outside its trace.
    const elsewhere = receiver.spans.filter(
      (s) => s.attributes['agentloom.invocation.id'] === id && s.traceId !== traceId,
    );
    expect(elsewhere).toEqual([]);
  });

  it("a run paused for confirmation and answered later continues the caller's trace", async () => {
    const cluster = new Cluster(options);
    const [first] = await cluster.start(1, { env: otelEnv(false) });
    const callerTrace = '0af7651916cd43dd8448eb211c80319c';
    const callerSpan = 'b7ad6b7169203331';
    const id = await start('confirm', 'confirm-1', { traceparent: `00-${callerTrace}-${callerSpan}-01` });
    const paused = await until(id, 'paused');
    expect(paused.traceId).toBe(callerTrace);
    await waitFor(() => stepsOf(callerTrace, 'approver').length === 1, {
      timeoutMs: 30_000,
      what: 'the paused step span',
    });
    const [pausedStep] = stepsOf(callerTrace, 'approver');
    expect(pausedStep?.attributes['agentloom.step.outcome']).toBe('paused');
    expect(pausedStep?.events).toEqual([
      {
        name: 'agentloom.pause',
        attributes: expect.objectContaining({
          'agentloom.pause.kind': 'confirmation',
          'gen_ai.tool.name': 'publish',
        }),
      },
    ]);
    // Every worker stops; the answer comes later; a new worker continues the run.
    first?.signal('SIGTERM');
    expect(await first?.exited).toMatchObject({ code: 0 });
    await engine.confirm(paused.pending[0]?.callId as string, { confirmed: true, by: 'e2e' });
    await cluster.start(1, { env: otelEnv(false) });
    await until(id, 'completed');
    const byPath = await nodeSpans(callerTrace, 'approver');
    await waitFor(() => stepsOf(callerTrace, 'approver').length === 2, {
      timeoutMs: 30_000,
      what: 'the resumed step span',
    });
    const root = byPath.get('approver');
    expect(root?.parentSpanId).toBe(callerSpan);
    const steps = stepsOf(callerTrace, 'approver');
    expect(steps.map((s) => s.attributes['agentloom.attempt']).sort()).toEqual([1, 2]);
    for (const step of steps) expect(step.parentSpanId).toBe(root?.spanId);
    expect(receiver.trace(callerTrace).some((s) => s.name === 'execute_tool publish')).toBe(true);
    printTree(callerTrace);
  });

  it('exports no prompt, instruction, tool argument or credential unless capture is on', async () => {
    // Everything exported so far ran with capture off (the api, both tests above).
    const exported = receiver.payloads.join('\n');
    expect(exported.length).toBeGreaterThan(0);
    for (const marker of [...Object.values(MARKERS), CREDENTIAL, options.databaseUrl]) {
      expect(exported.includes(marker), marker).toBe(false);
    }
    const before = receiver.payloads.length;
    const cluster = new Cluster(options);
    await cluster.start(1, { env: otelEnv(true) });
    await openGate(db, 'summary:capture-1');
    const id = await start('nested', 'capture-1');
    const { traceId } = await until(id, 'completed');
    await nodeSpans(traceId, 'nested');
    await waitFor(() => stepsOf(traceId, 'summary').length > 0, {
      timeoutMs: 30_000,
      what: 'summary step span',
    });
    const captured = receiver.payloads.slice(before).join('\n');
    for (const marker of Object.values(MARKERS)) expect(captured.includes(marker), marker).toBe(true);
    for (const secret of [CREDENTIAL, options.databaseUrl])
      expect(captured.includes(secret), secret).toBe(false);
  });
});
