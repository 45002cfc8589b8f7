/**
 * McpToolset's calls against a real MCP server built with @modelcontextprotocol/sdk (test/fixtures/mcp-server.ts),
 * over stdio (a child process the toolset starts) and over Streamable HTTP (a server process the test starts), on
 * PostgreSQL: the tools listed with a filter and a prefix, a call and its stored response with the idempotency key
 * in `_meta`, an `isError` result, a confirmation-gated tool approved and rejected, progress notifications, a call
 * past its timeout, a cancelled run's open call cancelled at the server, a server that is down, and toolsets
 * declared in YAML. The server's call log says what it saw. The server's questions to the user (elicitation):
 * mcp-toolset-elicitation.test.ts.
 */
import { writeFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { IDEMPOTENCY_META_KEY, LlmAgent, McpToolset, ScriptedModel } from '../../src/index.js';
import { loadAppsFromYaml } from '../../src/config/apps/load-apps.js';
import { engineOn } from '../support/services/engines.js';
import { REPO } from '../support/processes/cli.js';
import {
  calls,
  callsOnce,
  mcpHarness,
  postgres,
  replyOnce,
  scratchDir,
  SERVER,
  storedResponses,
  transports,
} from '../support/scenarios/mcp-toolset.js';
import { waitFor } from '../support/assert/wait-for.js';

const dir = scratchDir();

describe.each(transports)('McpToolset over $name', (transport) => {
  const { toolset, engineWith } = mcpHarness(transport, dir);

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
