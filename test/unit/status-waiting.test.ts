/** `agentloom status` shows a step that gave back its worker to wait for a model's rate limit. */
import { describe, expect, it } from 'vitest';
import { formatStatus } from '../../src/cli/client/status.js';
import type { NodeJson } from '../../src/api/http/schemas.js';

const node = (over: Partial<NodeJson>): NodeJson => ({
  path: 'root',
  agent: 'root',
  kind: 'llm',
  status: 'running',
  checkpoint: {},
  escalated: false,
  attempt: 3,
  parentPath: null,
  output: null,
  error: null,
  lease: null,
  waiting: null,
  createdAt: new Date(0).toISOString(),
  updatedAt: new Date(0).toISOString(),
  ...over,
});

describe('status with a rate-limit wait', () => {
  it('prints the model and about how long', () => {
    const until = new Date(Date.now() + 12_400).toISOString();
    const view = {
      id: 'inv_1',
      app: 'a',
      status: 'running' as const,
      definitionHash: 'h',
      llmCalls: 1,
      maxLlmCalls: 500,
      error: null,
      output: null,
      pending: [],
    };
    const lines = formatStatus(view, [
      node({ waiting: { kind: 'rate_limit', model: 'openai/gpt-4.1', limit: 'openai', until } }),
    ]);
    expect(lines).toContain('  root  llm  running  attempt 3  waiting for rate limit: openai/gpt-4.1, ~12 s');
    expect(formatStatus(view, [node({})])).toContain('  root  llm  running  attempt 3');
  });
});
