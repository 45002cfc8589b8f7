/** What the model adapters' wire tests share: a request, two tool declarations, an answer's text, a failure. */
import { expect } from 'vitest';
import type { Content } from '../../src/core/content.js';
import { AgentloomError } from '../../src/core/errors.js';
import type { ModelRequest, ToolDeclaration } from '../../src/models/model.js';

/** A model request saying "Hi", with `overrides`. */
export function modelRequest(overrides: Partial<ModelRequest> = {}): ModelRequest {
  return {
    systemInstruction: '',
    contents: [{ role: 'user', parts: [{ text: 'Hi' }] }],
    tools: [],
    agentName: 'agent',
    callIndex: 0,
    state: {},
    ...overrides,
  };
}

/** A tool with parameters. */
export const WEATHER_TOOL: ToolDeclaration = {
  name: 'get_weather',
  description: 'Weather of a city',
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
};

/** A tool without parameters. */
export const NOW_TOOL: ToolDeclaration = { name: 'now', description: 'The current time' };

/** All text of a content. */
export const textOf = (content: Content): string => content.parts.map((p) => p.text ?? '').join('');

/** The AgentloomError `promise` rejects with (fails the test when it resolves or rejects with another error). */
export async function failure(promise: Promise<unknown>): Promise<AgentloomError> {
  const err: unknown = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(AgentloomError);
  return err as AgentloomError;
}
