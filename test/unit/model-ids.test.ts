/** parseModelId, missingKeyVariable and createModelForId: LiteLLM-style ids → the right adapter. */
import { describe, expect, it } from 'vitest';
import { AgentloomError } from '../../src/core/errors.js';
import {
  AnthropicModel,
  createModelForId,
  Gemini,
  missingKeyVariable,
  OpenAIModel,
  parseModelId,
} from '../../src/models/index.js';

function configError(build: () => unknown): AgentloomError {
  let caught: unknown;
  try {
    build();
  } catch (err) {
    caught = err;
  }
  expect(caught).toBeInstanceOf(AgentloomError);
  expect((caught as AgentloomError).code).toBe('CONFIG');
  return caught as AgentloomError;
}

describe('parseModelId', () => {
  it.each([
    ['openai/gpt-4.1', { provider: 'openai', model: 'gpt-4.1' }],
    ['anthropic/claude-sonnet-4-5', { provider: 'anthropic', model: 'claude-sonnet-4-5' }],
    ['ollama/llama3.2', { provider: 'ollama', model: 'llama3.2' }],
    ['ollama_chat/llama3.2:3b', { provider: 'ollama', model: 'llama3.2:3b' }],
    ['ollama/hf.co/org/model:q4', { provider: 'ollama', model: 'hf.co/org/model:q4' }],
    ['azure/my-deployment', { provider: 'azure', model: 'my-deployment' }],
    ['gemini-2.5-flash', { provider: 'gemini', model: 'gemini-2.5-flash' }],
    ['gemini/gemini-2.5-pro', { provider: 'gemini', model: 'gemini-2.5-pro' }],
  ])('recognises %s', (id, expected) => {
    expect(parseModelId(id)).toEqual(expected);
  });

  it.each(['bedrock/anthropic.claude-3', 'gpt-4o', 'claude-sonnet-4-5', 'openai/', '', 'mistral/large'])(
    'leaves %j unrecognised',
    (id) => {
      expect(parseModelId(id)).toBeUndefined();
    },
  );
});

describe('missingKeyVariable', () => {
  it('names the key variable each provider needs when it is unset', () => {
    expect(missingKeyVariable('openai/gpt-4.1', {})).toBe('OPENAI_API_KEY');
    expect(missingKeyVariable('anthropic/claude-sonnet-4-5', {})).toBe('ANTHROPIC_API_KEY');
    expect(missingKeyVariable('azure/dep', {})).toBe('AZURE_OPENAI_API_KEY');
    expect(missingKeyVariable('gemini-2.5-flash', {})).toBe('GEMINI_API_KEY');
    expect(missingKeyVariable('openai/gpt-4.1', { OPENAI_API_KEY: '' })).toBe('OPENAI_API_KEY');
  });

  it('is undefined when the key is set, for Ollama, and for unknown ids', () => {
    expect(missingKeyVariable('openai/gpt-4.1', { OPENAI_API_KEY: 'k' })).toBeUndefined();
    expect(missingKeyVariable('gemini-2.5-flash', { GOOGLE_API_KEY: 'k' })).toBeUndefined();
    expect(missingKeyVariable('ollama/llama3.2', {})).toBeUndefined();
    expect(missingKeyVariable('bedrock/x', {})).toBeUndefined();
  });
});

describe('createModelForId', () => {
  it('builds the adapter each id names, named after the provider’s model', () => {
    const openai = createModelForId('openai/gpt-4.1', { OPENAI_API_KEY: 'k' });
    expect(openai).toBeInstanceOf(OpenAIModel);
    expect(openai.name).toBe('gpt-4.1');
    expect((openai as OpenAIModel).provider).toBe('OpenAI');

    const azure = createModelForId('azure/my-dep', {
      AZURE_OPENAI_API_KEY: 'k',
      AZURE_OPENAI_ENDPOINT: 'https://r.openai.azure.com',
      OPENAI_API_VERSION: '2024-10-21',
    });
    expect(azure).toBeInstanceOf(OpenAIModel);
    expect((azure as OpenAIModel).provider).toBe('Azure OpenAI');

    const ollama = createModelForId('ollama_chat/llama3.2', {});
    expect(ollama).toBeInstanceOf(OpenAIModel);
    expect((ollama as OpenAIModel).provider).toBe('Ollama');
    expect(ollama.name).toBe('llama3.2');

    const claude = createModelForId('anthropic/claude-sonnet-4-5', { ANTHROPIC_API_KEY: 'k' });
    expect(claude).toBeInstanceOf(AnthropicModel);
    expect(claude.name).toBe('claude-sonnet-4-5');

    expect(createModelForId('gemini-2.5-flash', { GOOGLE_API_KEY: 'k' })).toBeInstanceOf(Gemini);
  });

  it('refuses an unknown id and a missing variable with a CONFIG error naming what to write or set', () => {
    expect(configError(() => createModelForId('bedrock/x', {})).message).toContain('openai/gpt-4.1');
    expect(configError(() => createModelForId('anthropic/claude-sonnet-4-5', {})).message).toContain(
      'ANTHROPIC_API_KEY',
    );
    expect(configError(() => createModelForId('openai/gpt-4.1', {})).message).toContain('OPENAI_API_KEY');
    const azureKeyOnly = { AZURE_OPENAI_API_KEY: 'k' };
    expect(configError(() => createModelForId('azure/dep', azureKeyOnly)).message).toContain(
      'AZURE_OPENAI_ENDPOINT',
    );
    expect(
      configError(() =>
        createModelForId('azure/dep', {
          ...azureKeyOnly,
          AZURE_OPENAI_ENDPOINT: 'https://r.openai.azure.com',
        }),
      ).message,
    ).toContain('OPENAI_API_VERSION');
  });

  it('never reads process.env: a key present only there does not count', () => {
    const saved = process.env.OPENAI_API_KEY;
    process.env.OPENAI_API_KEY = 'from-process-env';
    try {
      expect(configError(() => createModelForId('openai/gpt-4.1', {})).message).toContain('OPENAI_API_KEY');
    } finally {
      if (saved === undefined) delete process.env.OPENAI_API_KEY;
      else process.env.OPENAI_API_KEY = saved;
    }
  });
});
