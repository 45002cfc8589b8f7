/**
 * kagent ModelConfig manifests (v1alpha2 field names): each supported provider builds its model with the block's
 * settings and the key read from the environment variable `apiKeySecretKey` names (or the provider's own); every
 * wrong field, provider or missing variable is a problem with file:line:col that says what to write.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { checkAppsYaml, formatProblem } from '../../src/config/apps/load-apps.js';
import type { LlmAgent } from '../../src/index.js';
import { AnthropicModel, Gemini, OpenAIModel, type Model, type ModelRequest } from '../../src/index.js';

const root = mkdtempSync(join(tmpdir(), 'agentloom-modelconfig-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
afterEach(() => vi.unstubAllEnvs());
let folders = 0;

const AGENT = `apiVersion: kagent.dev/v1alpha2
kind: Agent
metadata:
  name: helper
spec:
  declarative:
    systemMessage: Help.
    modelConfig: default-model-config
---
`;

/** A ModelConfig named default-model-config whose spec is `spec` (YAML lines, indented by 2). */
function modelConfig(spec: string): string {
  return `apiVersion: kagent.dev/v1alpha2
kind: ModelConfig
metadata:
  name: default-model-config
spec:
${spec
  .trim()
  .split('\n')
  .map((l) => `  ${l}`)
  .join('\n')}
`;
}

async function check(spec: string): Promise<{ model?: Model | string; problems: string[] }> {
  const dir = join(root, `f${folders++}`);
  mkdirSync(dir);
  writeFileSync(join(dir, 'app.yaml'), AGENT + modelConfig(spec));
  const result = await checkAppsYaml(dir, {});
  const agent = result.apps[0]?.agent as LlmAgent | undefined;
  return {
    ...(agent ? { model: agent.options.model } : {}),
    problems: result.problems.map((p) => formatProblem(p).replace(`${dir}/`, '')),
  };
}

describe('kagent ModelConfig', () => {
  it('OpenAI (kagent’s default provider): the key from the variable apiKeySecretKey names, openAI settings', async () => {
    vi.stubEnv('MY_OPENAI_KEY', 'sk-from-secret');
    const { model, problems } = await check(`
model: gpt-4.1
apiKeySecret: kagent-openai
apiKeySecretKey: MY_OPENAI_KEY
defaultHeaders: { x-team: agents }
openAI: { baseUrl: "http://127.0.0.1:9/v1", temperature: "0.2", maxTokens: 256, topP: "0.9" }
`);
    expect(problems).toEqual([]);
    expect(model).toMatchObject({ name: 'gpt-4.1', provider: 'OpenAI' });
  });

  it('builds each provider’s model: AzureOpenAI, Anthropic, Ollama (no key), Gemini with a Secret', async () => {
    vi.stubEnv('AZURE_OPENAI_API_KEY', 'az-key');
    vi.stubEnv('ANTHROPIC_API_KEY', 'ant-key');
    vi.stubEnv('GEMINI_KEY', 'g-key');
    const azure = await check(`
provider: AzureOpenAI
model: gpt-4o
azureOpenAI: { azureEndpoint: "https://r.openai.azure.com", apiVersion: "2024-10-21", azureDeployment: prod-4o }
`);
    expect(azure.problems).toEqual([]);
    expect(azure.model).toBeInstanceOf(OpenAIModel);
    expect(azure.model).toMatchObject({ provider: 'Azure OpenAI' });
    const anthropic = await check(`
provider: Anthropic
model: claude-sonnet-4-6
anthropic: { baseUrl: "http://127.0.0.1:9", maxTokens: 2048, topK: 40 }
`);
    expect(anthropic.problems).toEqual([]);
    expect(anthropic.model).toMatchObject({ name: 'claude-sonnet-4-6', provider: 'Anthropic' });
    const ollama = await check(`
provider: Ollama
model: llama3.2
ollama: { host: "localhost:11434", options: { temperature: "0.1", num_predict: "128" } }
`);
    expect(ollama.problems).toEqual([]);
    expect(ollama.model).toMatchObject({ name: 'llama3.2', provider: 'Ollama' });
    const gemini = await check(`
provider: Gemini
model: gemini-2.5-flash
apiKeySecret: kagent-gemini
apiKeySecretKey: GEMINI_KEY
`);
    expect(gemini.problems).toEqual([]);
    expect(gemini.model).toBeInstanceOf(Gemini);
    // A plain Gemini ModelConfig stands for its id (the engine serves it with its own key).
    expect((await check('provider: Gemini\nmodel: gemini-2.5-flash')).model).toBe('gemini-2.5-flash');
    expect(anthropic.model).not.toBeInstanceOf(OpenAIModel);
    expect(new AnthropicModel({ model: 'm', apiKey: 'k' }).provider).toBe('Anthropic');
  });

  it('applies the block’s generation settings under the agent’s own', async () => {
    vi.stubEnv('OPENAI_API_KEY', 'sk-test');
    const { model } = await check(`
model: gpt-4.1
openAI: { temperature: "0.2", maxTokens: 256, seed: 7 }
`);
    const sent: (Record<string, unknown> | undefined)[] = [];
    const inner = model as Model;
    // The wrapper merges its defaults into the request it passes to the adapter.
    const spy = vi.spyOn(OpenAIModel.prototype, 'generate').mockImplementation((request: ModelRequest) => {
      sent.push(request.generateContentConfig);
      return Promise.resolve({ content: { role: 'model', parts: [{ text: 'ok' }] } });
    });
    try {
      const base = {
        systemInstruction: '',
        contents: [],
        tools: [],
        agentName: 'a',
        callIndex: 0,
        state: {},
      };
      await inner.generate(base);
      await inner.generate({ ...base, generateContentConfig: { temperature: 1 } });
    } finally {
      spy.mockRestore();
    }
    expect(sent).toEqual([
      { temperature: 0.2, maxOutputTokens: 256, seed: 7 },
      { temperature: 1, maxOutputTokens: 256, seed: 7 },
    ]);
  });

  it('names a missing key variable, an unknown field, an unsupported provider and a mismatched block', async () => {
    vi.stubEnv('OPENAI_API_KEY', '');
    vi.stubEnv('MISSING_KEY', '');
    expect((await check('model: gpt-4.1')).problems).toEqual([
      'app.yaml:15:10: spec.model: the environment has no variable OPENAI_API_KEY (provider OpenAI reads its key from OPENAI_API_KEY, or from the variable apiKeySecretKey names): set it',
    ]);
    expect((await check('model: gpt-4.1\napiKeySecret: s\napiKeySecretKey: MISSING_KEY')).problems).toEqual([
      'app.yaml:17:20: spec.apiKeySecretKey: the environment has no variable MISSING_KEY (the key of Secret s is read from the environment variable apiKeySecretKey names): set it',
    ]);
    vi.stubEnv('OPENAI_API_KEY', 'sk');
    expect(
      (await check('model: gpt-4.1\nopenAI: { baseUrl: "http://x/v1", temprature: "0.2" }')).problems,
    ).toEqual([
      expect.stringMatching(/^app\.yaml:16:\d+: spec\.openAI.*temprature.*did you mean "temperature"\?/),
    ]);
    expect((await check('provider: Bedrock\nmodel: m')).problems).toEqual([
      'app.yaml:15:13: spec.provider: provider Bedrock is not supported by agentloom: write one of OpenAI, AzureOpenAI, Anthropic, Ollama, Gemini',
    ]);
    expect((await check('provider: Antropic\nmodel: m')).problems).toEqual([
      'app.yaml:15:13: spec.provider: unknown provider "Antropic"; did you mean "Anthropic"?',
    ]);
    expect((await check('provider: OpenAI\nmodel: m\nanthropic: { maxTokens: 10 }')).problems).toEqual([
      "app.yaml:17:14: spec.anthropic: anthropic is for provider Anthropic; this ModelConfig's provider is OpenAI: remove anthropic or write provider: Anthropic",
    ]);
    expect(
      (await check('provider: Ollama\nmodel: m\nollama: { options: { num_ctx: "4096" } }')).problems,
    ).toEqual([expect.stringMatching(/^app\.yaml:17:\d+: spec\.ollama\.options.*num_ctx.*cannot be set/)]);
  });
});
