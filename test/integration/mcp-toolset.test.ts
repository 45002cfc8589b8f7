/**
 * McpToolset against a real MCP server built with @modelcontextprotocol/sdk (test/fixtures/mcp-server.ts), over
 * stdio (a child process the toolset starts) and over Streamable HTTP (a server process the test starts), on
 * PostgreSQL: the tools listed with a filter and a prefix, a call and its stored response with the idempotency key
 * in `_meta`, an `isError` result, a confirmation-gated tool approved and rejected, a call past its timeout, a
 * cancelled run's open call cancelled at the server, the server's question to the user (elicitation) answered
 * through the HTTP API, timed out and withdrawn by a cancel, and a server that is down. The server's call log says what it
 * saw.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  IDEMPOTENCY_META_KEY,
  LlmAgent,
  McpToolset,
  ScriptedModel,
  type Engine,
  type McpConnectionOptions,
  type ScriptedTurn,
} from '../../src/index.js';
import { loadAppsFromYaml } from '../../src/config/apps/load-apps.js';
import { createApiServer } from '../../src/api/index.js';
import { REQUEST_ELICITATION } from '../../src/agents/llm/journal.js';
import { invocationToolRequests } from '../../src/store/repos/queries.js';
import { backends, engineOn } from '../support/engines.js';
import { REPO } from '../support/cli.js';
import { waitFor } from '../support/wait-for.js';

const SERVER = join(REPO, 'test/fixtures/mcp-server.ts');
const postgres = backends.find((b) => b.name === 'postgres')!;
const dir = mkdtempSync(join(tmpdir(), 'agentloom-mcp-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

interface LoggedCall {
  tool: string;
  args: Record<string, unknown>;
  meta?: Record<string, unknown>;
  end: 'done' | 'started' | 'cancelled';
  answer?: Record<string, unknown>;
}

/** What the server recorded in `log`. */
function calls(log: string): LoggedCall[] {
  if (!existsSync(log)) return [];
  return readFileSync(log, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as LoggedCall);
}

/** Calls one tool with `args` on its first model call, then answers with what it got back. */
function replyOnce(tool: string, args: Record<string, unknown>) {
  return (turn: ScriptedTurn) => {
    if (turn.callIndex === 0) return { functionCalls: [{ name: tool, args }] };
    const last = [...turn.contents].reverse().find((c) => c.parts.some((p) => p.functionResponse));
    return `got ${JSON.stringify(last?.parts.find((p) => p.functionResponse)?.functionResponse?.response)}`;
  };
}

function callsOnce(tool: string, args: Record<string, unknown>): ScriptedModel {
  return new ScriptedModel({ respond: replyOnce(tool, args) });
}

/** The function responses stored for the invocation's calls of `tool`. */
async function storedResponses(engine: Engine, invocationId: string, tool: string): Promise<unknown[]> {
  const out: unknown[] = [];
  for await (const event of engine.events(invocationId)) {
    for (const part of event.content?.parts ?? []) {
      if (part.functionResponse?.name === tool) out.push(part.functionResponse.response);
    }
  }
  return out;
}

interface Transport {
  name: string;
  /** A connection to a server that writes its call log to `log`, with `env` added to its environment. */
  connect(log: string, env?: Record<string, string>): Promise<McpConnectionOptions>;
}

const httpServers: ChildProcess[] = [];
afterAll(() => {
  for (const child of httpServers) child.kill('SIGKILL');
});

const transports: Transport[] = [
  {
    name: 'stdio',
    connect: async (log, env = {}) => ({
      command: process.execPath,
      args: ['--import', 'tsx', SERVER, '--stdio'],
      env: { ...env, MCP_CALL_LOG: log },
      cwd: REPO,
    }),
  },
  {
    name: 'Streamable HTTP',
    connect: async (log, env = {}) => {
      const child = spawn(process.execPath, ['--import', 'tsx', SERVER, '--http', '0'], {
        cwd: REPO,
        env: { ...process.env, ...env, MCP_CALL_LOG: log },
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      httpServers.push(child);
      let out = '';
      child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
      const port = await waitFor(() => /listening (\d+)/.exec(out)?.[1], {
        timeoutMs: 60_000,
        what: 'the MCP test server to listen',
      });
      return { url: `http://127.0.0.1:${port}/mcp` };
    },
  },
];

describe.each(transports)('McpToolset over $name', (transport) => {
  let n = 0;
  /** A fresh call log and toolset for one test (`env`: the server's, besides its call log). */
  async function toolset(
    options: Omit<ConstructorParameters<typeof McpToolset>[0], 'connection'> = {},
    env?: Record<string, string>,
  ): Promise<{ toolset: McpToolset; log: string }> {
    const log = join(dir, `${transport.name.replace(/\W/g, '-')}-${++n}.jsonl`);
    return { toolset: new McpToolset({ connection: await transport.connect(log, env), ...options }), log };
  }

  const engines: Engine[] = [];
  afterAll(async () => {
    await Promise.all(engines.map((e) => e.close()));
  });
  async function engineWith(agent: LlmAgent): Promise<Engine> {
    const engine = await engineOn(postgres, { apps: [{ name: 'app', agent }] });
    engines.push(engine);
    return engine;
  }

  it('lists the filtered tools under the prefix, sorted, with the server schemas as declarations', async () => {
    const { toolset: tools } = await toolset({ toolFilter: ['echo', 'add'], prefix: 'srv' });
    try {
      const listed = await tools.tools({});
      expect(listed.map((t) => t.name)).toEqual(['srv_add', 'srv_echo']);
      const add = listed[0]!.declaration();
      expect(add.description).toBe('Adds two numbers.');
      expect(add.parameters).toMatchObject({
        type: 'object',
        properties: { a: { type: 'number' }, b: { type: 'number' } },
        required: ['a', 'b'],
      });
      // Unsafe unless listed idempotent; asked once and cached.
      expect(listed.map((t) => t.sideEffects)).toEqual(['unsafe', 'unsafe']);
      expect(await tools.tools({})).toBe(listed);
      // The definition is the configuration, not the server's list.
      expect(tools.definition()).toMatchObject({
        mcp: { toolFilter: ['echo', 'add'], prefix: 'srv', idempotent: [] },
      });
    } finally {
      await tools.close();
    }
  });

  it('stores a call result as the function response, with the idempotency key in _meta', async () => {
    const { toolset: tools, log } = await toolset({ prefix: 'srv', idempotent: ['add'] });
    const seen: string[][] = [];
    const reply = replyOnce('srv_add', { a: 2, b: 3 });
    const agent = new LlmAgent({
      name: 'calc',
      model: new ScriptedModel({
        respond: (turn) => {
          seen.push(turn.toolNames);
          return reply(turn);
        },
      }),
      tools: [tools],
    });
    const engine = await engineWith(agent);
    const { invocationId } = await engine.enqueue({ app: 'app', userId: 'u', input: 'add' });
    const done = await engine.wait(invocationId, { timeoutMs: 60_000 });
    expect(done.status).toBe('completed');
    const response = {
      content: [{ type: 'text', text: '5' }],
      structuredContent: { sum: 5 },
      isError: false,
    };
    expect(await storedResponses(engine, invocationId, 'srv_add')).toEqual([response]);
    expect(done.output).toBe(`got ${JSON.stringify(response)}`);
    expect(seen[0]).toEqual([
      'srv_add',
      'srv_ask',
      'srv_block',
      'srv_count',
      'srv_echo',
      'srv_fail',
      'srv_publish',
      'srv_slow',
    ]);
    const [call] = calls(log);
    expect(calls(log)).toHaveLength(1);
    const callId = (await engine.getSession(done.sessionId)).events
      .flatMap((e) => e.content?.parts ?? [])
      .find((p) => p.functionCall?.name === 'srv_add')?.functionCall?.id;
    expect(call).toMatchObject({
      tool: 'add',
      args: { a: 2, b: 3 },
      meta: { [IDEMPOTENCY_META_KEY]: `${invocationId}:${callId}` },
      end: 'done',
    });
  });

  it('gives the model an isError result as the server sent it', async () => {
    const { toolset: tools } = await toolset();
    const engine = await engineWith(
      new LlmAgent({ name: 'caller', model: callsOnce('fail', {}), tools: [tools] }),
    );
    const { invocationId } = await engine.enqueue({ app: 'app', userId: 'u', input: 'go' });
    const done = await engine.wait(invocationId, { timeoutMs: 60_000 });
    expect(done.status).toBe('completed');
    expect(await storedResponses(engine, invocationId, 'fail')).toEqual([
      { content: [{ type: 'text', text: 'the service refused' }], isError: true },
    ]);
  });

  it('pauses a gated tool for confirmation: approved it runs once, rejected it never reaches the server', async () => {
    const { toolset: tools, log } = await toolset({ requireConfirmation: ['publish'] });
    const engine = await engineWith(
      new LlmAgent({ name: 'poster', model: callsOnce('publish', { title: 'hello' }), tools: [tools] }),
    );
    const approved = await engine.enqueue({ app: 'app', userId: 'u', input: 'one' });
    const paused = await engine.wait(approved.invocationId, { timeoutMs: 60_000 });
    expect(paused.status).toBe('paused');
    expect(paused.pending).toMatchObject([
      { kind: 'confirmation', name: 'publish', args: { title: 'hello' } },
    ]);
    expect(calls(log)).toEqual([]);
    await engine.confirm(paused.pending[0]!.callId, { confirmed: true });
    expect((await engine.wait(approved.invocationId, { timeoutMs: 60_000 })).status).toBe('completed');
    expect(calls(log).map((c) => c.tool)).toEqual(['publish']);

    const rejected = await engine.enqueue({ app: 'app', userId: 'u', input: 'two' });
    const paused2 = await engine.wait(rejected.invocationId, { timeoutMs: 60_000 });
    await engine.confirm(paused2.pending[0]!.callId, { confirmed: false });
    const done = await engine.wait(rejected.invocationId, { timeoutMs: 60_000 });
    expect(done.status).toBe('completed');
    expect(done.output).toContain('rejected');
    expect(calls(log).map((c) => c.tool)).toEqual(['publish']);
  });

  it("streams the server's progress notifications as partial events, never stored", async () => {
    const { toolset: tools, log } = await toolset();
    const engine = await engineWith(
      new LlmAgent({ name: 'counter', model: callsOnce('count', { n: 3, key: 'c' }), tools: [tools] }),
    );
    const { invocationId } = await engine.enqueue({ app: 'app', userId: 'u', input: 'go' });
    const progress: unknown[] = [];
    for await (const event of engine.events(invocationId, { follow: true, partial: true })) {
      // Following now (the first stored event came through): let the server start counting.
      if (!existsSync(`${log}.release-c`)) writeFileSync(`${log}.release-c`, '');
      const response = event.content?.parts?.[0]?.functionResponse;
      if (event.partial && response?.name === 'count') progress.push(response.response);
    }
    expect(progress).toEqual([
      { progress: 1, total: 3, message: 'counted 1' },
      { progress: 2, total: 3, message: 'counted 2' },
      { progress: 3, total: 3, message: 'counted 3' },
    ]);
    // Stored: the result only.
    expect(await storedResponses(engine, invocationId, 'count')).toEqual([
      { content: [{ type: 'text', text: 'counted to 3' }], isError: false },
    ]);
  });

  it('gives the model a clear error when a call passes its timeout, and cancels it at the server', async () => {
    const { toolset: tools, log } = await toolset({ timeoutMs: 1_000 });
    const engine = await engineWith(
      new LlmAgent({ name: 'waiter', model: callsOnce('slow', { ms: 30_000 }), tools: [tools] }),
    );
    const { invocationId } = await engine.enqueue({ app: 'app', userId: 'u', input: 'go' });
    const done = await engine.wait(invocationId, { timeoutMs: 60_000 });
    expect(done.status).toBe('completed');
    const [response] = (await storedResponses(engine, invocationId, 'slow')) as { error: string }[];
    expect(response?.error).toMatch(/did not answer tool "slow" within 1000 ms/);
    await waitFor(() => calls(log).some((c) => c.end === 'cancelled'), {
      timeoutMs: 30_000,
      what: 'the server to see notifications/cancelled',
    });
  });

  it("asks the user the server's question while the call is open: answered through the HTTP API", async () => {
    const { toolset: tools, log } = await toolset({ prefix: 'srv' });
    const engine = await engineWith(
      new LlmAgent({
        name: 'greeter',
        model: callsOnce('srv_ask', { question: 'Who are you?' }),
        tools: [tools],
      }),
    );
    const api = await createApiServer({ engine, processMetrics: false });
    const base = await api.listen({ port: 0, host: '127.0.0.1' });
    try {
      const { invocationId } = await engine.enqueue({ app: 'app', userId: 'u', input: 'go' });
      const waiting = await waitFor(
        async () => (await engine.get(invocationId)).pending.find((p) => p.kind === 'elicitation'),
        { timeoutMs: 60_000, what: 'the elicitation to be pending' },
      );
      // The call is open and the step holds its worker: the run is running, not paused.
      expect((await engine.get(invocationId)).status).toBe('running');
      const callId = (await engine.getSession((await engine.get(invocationId)).sessionId)).events
        .flatMap((e) => e.content?.parts ?? [])
        .find((p) => p.functionCall?.name === 'srv_ask')?.functionCall?.id;
      expect(waiting).toMatchObject({
        kind: 'elicitation',
        name: 'srv_ask',
        args: { question: 'Who are you?' },
        originalCallId: callId,
        elicitation: {
          message: 'Who are you?',
          source: 'srv',
          requestedSchema: { type: 'object', required: ['name'] },
        },
      });
      // The inbox lists it too.
      const inbox = (await (await fetch(`${base}/v1/pending?kind=elicitation`)).json()) as {
        calls: { callId: string }[];
      };
      expect(inbox.calls.map((c) => c.callId)).toContain(waiting.callId);

      const answer = (response: unknown) =>
        fetch(`${base}/v1/invocations/${invocationId}/responses`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-agentloom-actor': 'ada' },
          body: JSON.stringify({ functionResponses: [{ id: waiting.callId, response }] }),
        });
      // Content that does not match the requested schema is refused, naming the field; nothing is stored.
      const bad = await answer({ action: 'accept', content: { age: -3 } });
      expect(bad.status).toBe(400);
      const badBody = (await bad.json()) as { error: { code: string; message: string; details: unknown } };
      expect(badBody.error).toMatchObject({ code: 'VALIDATION', details: { field: 'response.content' } });
      expect(badBody.error.message).toMatch(/name/);
      const noAction = await answer({ name: 'Ada' });
      expect(noAction.status).toBe(400);
      expect(((await noAction.json()) as { error: { message: string } }).error.message).toMatch(
        /"action": "accept"/,
      );
      expect((await engine.get(invocationId)).pending).toHaveLength(1);

      const good = await answer({ action: 'accept', content: { name: 'Ada', age: 36 } });
      expect(good.status).toBe(200);
      const done = await engine.wait(invocationId, { timeoutMs: 60_000 });
      expect(done.status).toBe('completed');
      const result = { action: 'accept', content: { name: 'Ada', age: 36 } };
      expect(calls(log).filter((c) => c.end === 'done')).toMatchObject([{ tool: 'ask', answer: result }]);
      const [stored] = (await storedResponses(engine, invocationId, 'srv_ask')) as {
        content: { text: string }[];
        isError: boolean;
      }[];
      expect(stored?.isError).toBe(false);
      expect(JSON.parse(stored!.content[0]!.text)).toEqual(result);
      // The question and the answer are events; the model never sees them.
      const events = (await engine.getSession(done.sessionId)).events;
      const asked = events.find((e) =>
        e.content?.parts.some((p) => p.functionCall?.name === REQUEST_ELICITATION),
      );
      expect(asked?.content?.parts[0]?.functionCall).toMatchObject({
        id: waiting.callId,
        args: { functionCallId: callId, message: 'Who are you?', source: 'srv' },
      });
      const answered = events.find((e) =>
        e.content?.parts.some((p) => p.functionResponse?.name === REQUEST_ELICITATION),
      );
      expect(answered).toMatchObject({ author: 'user' });
      expect(answered?.content?.parts[0]?.functionResponse).toMatchObject({
        id: waiting.callId,
        response: result,
      });
      const trail = (await (await fetch(`${base}/v1/invocations/${invocationId}/requests`)).json()) as {
        requests: unknown[];
      };
      expect(trail.requests).toMatchObject([
        {
          callId: waiting.callId,
          kind: 'elicitation',
          status: 'answered',
          answeredBy: 'ada',
          response: result,
        },
      ]);
      // Answering again after the call ended: a conflict, not a second answer.
      expect((await answer({ action: 'decline' })).status).toBe(409);
    } finally {
      await api.close();
    }
  });

  it('declines an elicitation nobody answers within the call timeout, and the call ends', async () => {
    const { toolset: tools, log } = await toolset({ timeoutMs: 1_500 });
    const engine = await engineWith(
      new LlmAgent({ name: 'greeter', model: callsOnce('ask', { question: 'Anyone?' }), tools: [tools] }),
    );
    const { invocationId } = await engine.enqueue({ app: 'app', userId: 'u', input: 'go' });
    const done = await engine.wait(invocationId, { timeoutMs: 60_000 });
    expect(done.status).toBe('completed');
    // The time spent waiting for a human is not the call's: it ended with the server's answer, not a timeout.
    const declined = { action: 'decline' };
    expect(calls(log).filter((c) => c.end === 'done')).toMatchObject([{ tool: 'ask', answer: declined }]);
    expect(await storedResponses(engine, invocationId, 'ask')).toEqual([
      { content: [{ type: 'text', text: JSON.stringify(declined) }], isError: false },
    ]);
    const [request] = await invocationToolRequests(engine.store.db, invocationId);
    expect(request).toMatchObject({
      kind: 'elicitation',
      status: 'expired',
      response: { action: 'decline' },
    });
    const events = (await engine.getSession(done.sessionId)).events;
    const expiry = events.find((e) =>
      e.content?.parts.some((p) => p.functionResponse?.name === REQUEST_ELICITATION),
    );
    expect(expiry?.content?.parts[0]?.functionResponse?.response).toMatchObject({
      action: 'decline',
      reason: 'no answer within 1500 ms',
    });
  });

  it('withdraws a waiting elicitation and cancels the call at the server when the run is cancelled', async () => {
    // A server that reads its input late gets the call's cancellation and whatever the client sends next in one
    // read, where its SDK handles a response before a notification: the question must not be answered as if the
    // user had dismissed it, or the server finishes the call on that answer instead of cancelling it.
    const { toolset: tools, log } = await toolset({}, { MCP_STDIN_HOLD_MS: '500' });
    const engine = await engineWith(
      new LlmAgent({
        name: 'greeter',
        model: callsOnce('ask', { question: 'Still there?' }),
        tools: [tools],
      }),
    );
    const { invocationId } = await engine.enqueue({ app: 'app', userId: 'u', input: 'go' });
    const waiting = await waitFor(
      async () => (await engine.get(invocationId)).pending.find((p) => p.kind === 'elicitation'),
      { timeoutMs: 60_000, what: 'the elicitation to be pending' },
    );
    expect((await engine.cancel(invocationId)).status).toBe('cancelled');
    const ended = await waitFor(() => calls(log).find((c) => c.end !== 'started'), {
      timeoutMs: 30_000,
      what: 'the server to end the call',
    });
    // Not `done` with `{action: 'cancel'}`: nobody dismissed the question, the call was cancelled.
    expect(ended).toMatchObject({ tool: 'ask', end: 'cancelled' });
    expect(calls(log).filter((c) => c.end === 'done')).toEqual([]);
    expect(await invocationToolRequests(engine.store.db, invocationId)).toMatchObject([
      { callId: waiting.callId, status: 'cancelled' },
    ]);
    await expect(
      engine.respond({
        invocationId,
        functionResponses: [{ id: waiting.callId, response: { action: 'decline' } }],
      }),
    ).rejects.toMatchObject({ code: 'CONFLICT' });
  });

  it('cancels the open call at the server when the run is cancelled', async () => {
    const { toolset: tools, log } = await toolset();
    const engine = await engineWith(
      new LlmAgent({ name: 'waiter', model: callsOnce('slow', { ms: 60_000 }), tools: [tools] }),
    );
    const { invocationId } = await engine.enqueue({ app: 'app', userId: 'u', input: 'go' });
    await waitFor(() => calls(log).some((c) => c.end === 'started'), {
      timeoutMs: 60_000,
      what: 'the call to reach the server',
    });
    expect((await engine.cancel(invocationId)).status).toBe('cancelled');
    await waitFor(() => calls(log).some((c) => c.end === 'cancelled'), {
      timeoutMs: 30_000,
      what: 'the server to see notifications/cancelled',
    });
    expect(calls(log).filter((c) => c.end === 'done')).toEqual([]);
  });
});

describe('McpToolset with its server down', () => {
  it('fails the step with an error naming the server, without crashing the worker', async () => {
    const tools = new McpToolset({
      name: 'offline',
      connection: { url: 'http://127.0.0.1:9/mcp' },
      timeoutMs: 2_000,
    });
    const engine = await engineOn(postgres, {
      apps: [{ name: 'app', agent: new LlmAgent({ name: 'a', model: callsOnce('x', {}), tools: [tools] }) }],
    });
    try {
      const { invocationId } = await engine.enqueue({ app: 'app', userId: 'u', input: 'go' });
      const done = await engine.wait(invocationId, { timeoutMs: 60_000 });
      expect(done.status).toBe('failed');
      expect(done.error?.message).toMatch(
        /MCP server "offline" \(http:\/\/127\.0\.0\.1:9\/mcp\) could not be reached/,
      );
    } finally {
      await engine.close();
    }
  });

  it('refuses a bad configuration, naming the field', () => {
    expect(() => new McpToolset({ connection: { url: 'not a url' } })).toThrow(/connection/);
    expect(() => new McpToolset({ connection: { command: 'x' }, prefix: 'bad prefix' })).toThrow(/prefix/);
  });
});

describe('McpToolset from YAML (tools: - mcp: …)', () => {
  it('builds a toolset from an mcp entry and runs its tools', async () => {
    const log = join(dir, 'yaml.jsonl');
    const file = join(dir, 'mcp-app.yaml');
    writeFileSync(
      file,
      [
        'app: mcpapp',
        'agents:',
        '  - name: caller',
        '    type: LlmAgent',
        '    model: caller_model',
        '    tools:',
        '      - mcp:',
        `          command: ${JSON.stringify(process.execPath)}`,
        `          args: [--import, tsx, ${JSON.stringify(SERVER)}, --stdio]`,
        `          cwd: ${JSON.stringify(REPO)}`,
        `          env: { MCP_CALL_LOG: ${JSON.stringify(log)} }`,
        '          prefix: srv',
        '          toolFilter: [echo]',
        '',
      ].join('\n'),
    );
    const { apps } = await loadAppsFromYaml(file, {
      models: { caller_model: callsOnce('srv_echo', { text: 'from yaml' }) },
    });
    const engine = await engineOn(postgres, {
      apps,
      models: { caller_model: callsOnce('srv_echo', { text: 'from yaml' }) },
    });
    try {
      const { invocationId } = await engine.enqueue({ app: 'mcpapp', userId: 'u', input: 'go' });
      const done = await engine.wait(invocationId, { timeoutMs: 60_000 });
      expect(done.status).toBe('completed');
      expect(await storedResponses(engine, invocationId, 'srv_echo')).toEqual([
        { content: [{ type: 'text', text: 'echo: from yaml' }], isError: false },
      ]);
      expect(calls(log).map((c) => c.tool)).toEqual(['echo']);
    } finally {
      await engine.close();
    }
  });

  it('reports a bad mcp entry at its line, saying what to write', async () => {
    const file = join(dir, 'bad-mcp.yaml');
    writeFileSync(
      file,
      [
        'app: bad',
        'agents:',
        '  - name: caller',
        '    type: LlmAgent',
        '    model: m',
        '    tools:',
        '      - mcp: { url: "http://127.0.0.1:1/mcp", command: node }',
        '      - mcp: { url: "http://127.0.0.1:1/mcp", args: [x] }',
        '      - mcp: { command: node, prefix: "not ok" }',
        '',
      ].join('\n'),
    );
    const err = (await loadAppsFromYaml(file, { models: { m: callsOnce('x', {}) } }).catch(
      (e: unknown) => e,
    )) as Error;
    expect(err.message).toContain('3 problems');
    expect(err.message).toMatch(/:7:\d+.*write either url: .* or command: /);
    expect(err.message).toMatch(/:8:\d+.*args apply to command: servers; remove them/);
    expect(err.message).toMatch(/:9:\d+.*write a prefix of letters, digits and _/);
  });
});
