/**
 * examples/kagent's MCP tools through `agentloom dev`: `dev --apps <the example> --registry
 * examples/kagent/scripted-models.ts` (a scripted model under the manifests' modelConfig name) runs the pipeline;
 * the writer's `save_note` on the kmcp MCPServer `notes` (stdio, a child process of dev) waits for a human's
 * approval, given through the HTTP API; the reviewer's `search_notes` on the RemoteMCPServer `notes-http`
 * (Streamable HTTP, another process with its own notebook) answers; the run completes with the refactorer's answer.
 * The same pipeline over A2A at kagent's path: the manifests' namespace in the path, the approval asked as
 * `input-required` and given by a DataPart on the same task.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SendMessageRequest, TaskState, type Task } from '@a2a-js/sdk';
import { ClientFactory } from '@a2a-js/sdk/client';
import { freePort, ServerProcess } from '../support/processes/cli.js';
import { kagentExample } from '../support/processes/kagent-example.js';
import { apiClient, type Json } from '../support/client/http-client.js';
import { runReaches } from '../support/client/runs.js';

const data = mkdtempSync(join(tmpdir(), 'agentloom-kagent-mcp-'));
let example: Awaited<ReturnType<typeof kagentExample>>;
let dev: ServerProcess;
let url: string;

beforeAll(async () => {
  example = await kagentExample();
  const port = await freePort();
  dev = new ServerProcess([
    'dev',
    '--port',
    String(port),
    '--apps',
    example.dir,
    '--registry',
    'examples/kagent/scripted-models.ts',
    '--data',
    join(data, 'pglite'),
  ]);
  await dev.waitForOutput(/^agentloom dev: listening on (http:\/\/\S+)$/m, {
    timeoutMs: 170_000,
    what: 'dev',
  });
  url = `http://127.0.0.1:${port}`;
}, 240_000);

afterAll(async () => {
  dev?.child.kill('SIGTERM');
  await dev?.exited;
  await example?.close();
  rmSync(data, { recursive: true, force: true });
}, 60_000);

const http = apiClient({ base: () => url, requireOk: true });

interface Invocation {
  id: string;
  status: string;
  output: string | null;
  pending: { callId: string; kind: string; name: string; args: Record<string, unknown> }[];
}

/** The run once it has `status`; a run that fails or is cancelled fails the test at once. */
const until = (id: string, status: string) =>
  runReaches(http, id, status, {
    timeoutMs: 120_000,
    intervalMs: 200,
    failOn: ['failed', 'cancelled'],
  }) as Promise<Json & Invocation>;

describe('examples/kagent MCP tools under agentloom dev', () => {
  it('runs the pipeline: save_note on the MCPServer (approved), then search_notes on the RemoteMCPServer', async () => {
    const { invocationId } = (
      await http('POST', '/v1/apps/code-development-pipeline/invocations', {
        userId: 'ann',
        input: 'write fib',
      })
    ).body as { invocationId: string };
    const paused = await until(invocationId, 'paused');
    expect(paused.pending).toMatchObject([
      { kind: 'confirmation', name: 'save_note', args: { title: 'fib' } },
    ]);
    await http('POST', `/v1/invocations/${invocationId}/confirmations/${paused.pending[0]!.callId}`, {
      confirmed: true,
    });
    const done = await until(invocationId, 'completed');
    expect(done.output).toContain('@cache');

    const { events } = (await http('GET', `/v1/invocations/${invocationId}/events`)).body as {
      events: {
        content?: { parts?: { functionResponse?: { name: string; response: Record<string, unknown> } }[] };
      }[];
    };
    const responses = events.flatMap((e) =>
      (e.content?.parts ?? []).flatMap((p) => (p.functionResponse ? [p.functionResponse] : [])),
    );
    const saved = responses.filter((r) => r.name === 'save_note' && r.response.isError === false);
    expect(saved).toEqual([
      {
        name: 'save_note',
        id: expect.any(String),
        response: {
          content: [{ type: 'text', text: 'saved "fib" (1 notes)' }],
          structuredContent: { saved: 1 },
          isError: false,
        },
      },
    ]);
    // The HTTP server is another process with a notebook of its own: it answered, from its own notes.
    const search = responses.find((r) => r.name === 'search_notes');
    expect(search?.response).toEqual({ content: [{ type: 'text', text: 'nothing found' }], isError: false });
  });

  it("runs over A2A at kagent's path: input-required for the approval, answered on the same task", async () => {
    expect(
      (await fetch(`${url}/api/a2a/default/code-development-pipeline/.well-known/agent-card.json`)).status,
    ).toBe(404);
    const client = await new ClientFactory().createFromUrl(
      `${url}/api/a2a/kagent/code-development-pipeline/`,
    );
    const card = await client.getAgentCard();
    expect(card.name).toBe('code-development-pipeline');
    expect(card.description).toBe('Orchestrates the code development workflow');
    expect(card.skills.map((s) => s.id)).toContain('code_writer');
    const send = (parts: unknown[], taskId?: string): SendMessageRequest =>
      SendMessageRequest.fromJSON({
        message: {
          messageId: `m-${parts.length}-${taskId ?? ''}`,
          role: 'ROLE_USER',
          parts,
          ...(taskId ? { taskId } : {}),
        },
      });
    const paused = (await client.sendMessage(send([{ text: 'write fib' }]))) as Task;
    expect(paused.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
    const asked = paused.status?.message?.parts[0]?.content;
    expect(asked).toMatchObject({
      $case: 'data',
      value: { kind: 'confirmation', tool: 'save_note', args: { title: 'fib' } },
    });
    const callId = (asked as { value: { callId: string } }).value.callId;
    const done = (await client.sendMessage(send([{ data: { callId, confirmed: true } }], paused.id))) as Task;
    expect(done.id).toBe(paused.id);
    expect(done.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    const output = done.artifacts[0]?.parts[0]?.content;
    expect(output?.$case === 'text' && output.value).toContain('@cache');
  });
});
