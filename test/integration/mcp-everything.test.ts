/**
 * McpToolset against a server no one here wrote: `@modelcontextprotocol/server-everything` (the MCP project's own
 * reference server, MIT), over stdio, on PostgreSQL. Its tools are listed with a filter and a prefix (names with
 * dashes included), a call's text result and a structured result are stored as the function responses, and its
 * long-running operation's progress notifications reach live followers as partial events, never stored.
 */
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { LlmAgent, McpToolset, ScriptedModel, type Engine } from '../../src/index.js';
import { backends, engineOn } from '../support/services/engines.js';

const postgres = backends.find((b) => b.name === 'postgres')!;
/** Its bin (the package has no main export). */
const SERVER = join(
  dirname(createRequire(import.meta.url).resolve('@modelcontextprotocol/server-everything/package.json')),
  'dist/index.js',
);

function everything(): McpToolset {
  return new McpToolset({
    name: 'everything',
    connection: { command: process.execPath, args: [SERVER, 'stdio'] },
    prefix: 'ev',
    toolFilter: ['echo', 'get-sum', 'get-structured-content', 'trigger-long-running-operation'],
  });
}

/** Calls the tools of `calls` in one round, then answers 'done'. */
function calling(calls: { name: string; args: Record<string, unknown> }[]): ScriptedModel {
  return new ScriptedModel({ respond: (turn) => (turn.callIndex === 0 ? { functionCalls: calls } : 'done') });
}

const engines: Engine[] = [];
afterAll(async () => {
  await Promise.all(engines.map((e) => e.close()));
});

async function run(calls: { name: string; args: Record<string, unknown> }[], partial = false) {
  const agent = new LlmAgent({ name: 'caller', model: calling(calls), tools: [everything()] });
  const engine = await engineOn(postgres, { apps: [{ name: 'app', agent }] });
  engines.push(engine);
  const { invocationId } = await engine.enqueue({ app: 'app', userId: 'u', input: 'go' });
  const stored = new Map<string, unknown>();
  const partials: unknown[] = [];
  for await (const event of engine.events(invocationId, { follow: true, partial })) {
    for (const part of event.content?.parts ?? []) {
      const response = part.functionResponse;
      if (!response) continue;
      if (event.partial) partials.push(response.response);
      else stored.set(response.name, response.response);
    }
  }
  return { done: await engine.get(invocationId), stored, partials };
}

describe('McpToolset against @modelcontextprotocol/server-everything (stdio)', () => {
  it('lists the filtered tools under the prefix, dashes and all', async () => {
    const toolset = everything();
    try {
      const tools = await toolset.tools({});
      expect(tools.map((t) => t.name)).toEqual([
        'ev_echo',
        'ev_get-structured-content',
        'ev_get-sum',
        'ev_trigger-long-running-operation',
      ]);
      expect(tools[2]?.declaration().parameters).toMatchObject({
        type: 'object',
        properties: { a: { type: 'number' }, b: { type: 'number' } },
      });
    } finally {
      await toolset.close();
    }
  });

  it('stores text and structured results as the function responses', async () => {
    const { done, stored } = await run([
      { name: 'ev_echo', args: { message: 'durable' } },
      { name: 'ev_get-sum', args: { a: 2, b: 3 } },
      { name: 'ev_get-structured-content', args: { location: 'Chicago' } },
    ]);
    expect(done.status).toBe('completed');
    expect(stored.get('ev_echo')).toEqual({
      content: [{ type: 'text', text: 'Echo: durable' }],
      isError: false,
    });
    expect(JSON.stringify(stored.get('ev_get-sum'))).toContain('5');
    expect(stored.get('ev_get-structured-content')).toMatchObject({
      structuredContent: { temperature: 36, conditions: 'Light rain / drizzle', humidity: 82 },
      isError: false,
    });
  });

  it("streams its long-running operation's progress as partial events", async () => {
    const { done, stored, partials } = await run(
      [{ name: 'ev_trigger-long-running-operation', args: { duration: 2, steps: 4 } }],
      true,
    );
    expect(done.status).toBe('completed');
    expect(stored.get('ev_trigger-long-running-operation')).toMatchObject({ isError: false });
    // Progress that arrived while following, in order, of 4. Partials are best effort: the first may come before
    // the follower is attached, the last after the stored response ended the stream.
    expect(partials.length).toBeGreaterThan(0);
    const steps = (partials as { progress: number; total: number }[]).map((p) => {
      expect(p.total).toBe(4);
      return p.progress;
    });
    expect(steps).toEqual([...steps].sort((a, b) => a - b));
    expect(Math.max(...steps)).toBeLessThanOrEqual(4);
  });
});
