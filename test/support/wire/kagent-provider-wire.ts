/**
 * A kagent `default-model-config` per provider, and the wire server it points at, for test/e2e/kagent-providers.test.ts:
 * each provider's ModelConfig (its block, its key from the variable `apiKeySecretKey` names, one generation setting
 * and a default header), a scripted server in the provider's wire format, and what a request of that provider must
 * look like (path, key header, model, the setting).
 *
 * The server answers from what a request holds, not from a queue — the order of the calls depends on parallel
 * branches: it tells the agent by its system message (a manifest's `systemMessage`), then
 * - an agent offered workflow tools (`<parent>_<role>_sequential|parallel|loop`) calls all of them, in the order
 *   offered;
 * - an agent offered `exit_loop` that has answered before (an assistant turn in its history: the loop's second
 *   iteration) calls `exit_loop`;
 * - any other agent answers text naming itself and its turn.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { anthropicMessage, startAnthropicWire } from './anthropic-wire.js';
import { chatCompletion, startOpenAIWire } from './openai-wire.js';
import type { RecordedRequest, ScriptedWireServer, WireReply } from './wire-server.js';

/** The providers of a kagent ModelConfig agentloom serves besides Gemini. */
export const KAGENT_PROVIDERS = ['OpenAI', 'Anthropic', 'Ollama', 'AzureOpenAI'] as const;
export type KagentProvider = (typeof KAGENT_PROVIDERS)[number];

/** What the scripted model did for one request. */
export type Move = { text: string } | { calls: { name: string; args: Record<string, unknown> }[] };

/** One model call the server answered. */
export interface AnsweredCall {
  /** The manifest name of the agent that called (by its system message), or '?' when none matched. */
  agent: string;
  request: RecordedRequest;
  move: Move;
}

/** A provider's wire server, answering as the agents of one folder at a time. */
export interface ProviderWire {
  readonly provider: KagentProvider;
  readonly server: ScriptedWireServer;
  /** The calls answered since the last `serve`, oldest first. */
  readonly calls: AnsweredCall[];
  /** Answers as the Agents of `dir` from now on (their system messages tell them apart); forgets earlier calls. */
  serve(dir: string): void;
  close(): Promise<void>;
}

/** The value of the key variable (sent in the provider's key header). */
export const KEYS: Readonly<Record<KagentProvider, string | undefined>> = {
  OpenAI: 'sk-e2e-openai-key',
  Anthropic: 'sk-ant-e2e-anthropic-key',
  Ollama: undefined,
  AzureOpenAI: 'e2e-azure-key',
};

/** The variable `apiKeySecretKey` names (set for validate and dev). */
export const KEY_VARIABLES: Readonly<Record<KagentProvider, string | undefined>> = {
  OpenAI: 'KAGENT_E2E_OPENAI_KEY',
  Anthropic: 'KAGENT_E2E_ANTHROPIC_KEY',
  Ollama: undefined,
  AzureOpenAI: 'KAGENT_E2E_AZURE_KEY',
};

const MODELS: Readonly<Record<KagentProvider, string>> = {
  OpenAI: 'gpt-4.1-mini',
  Anthropic: 'claude-sonnet-4-5',
  Ollama: 'llama3.2',
  AzureOpenAI: 'gpt-4o',
};

export const AZURE_DEPLOYMENT = 'e2e-gpt-4o';
export const AZURE_API_VERSION = '2024-10-21';
/** `defaultHeaders` of every ModelConfig. */
export const TEAM_HEADER = { name: 'x-kagent-team', value: 'agents' };

/** The provider's block of the ModelConfig spec (YAML, indented under `spec:`), pointing at `url`. */
function block(provider: KagentProvider, url: string): string {
  switch (provider) {
    case 'OpenAI':
      return `  openAI:\n    baseUrl: ${url}/v1\n    temperature: "0.2"`;
    case 'Anthropic':
      return `  anthropic:\n    baseUrl: ${url}\n    maxTokens: 1024`;
    case 'Ollama':
      return `  ollama:\n    host: ${url}\n    options:\n      temperature: "0.3"`;
    case 'AzureOpenAI':
      return `  azureOpenAI:\n    azureEndpoint: ${url}\n    apiVersion: "${AZURE_API_VERSION}"\n    azureDeployment: ${AZURE_DEPLOYMENT}\n    maxTokens: 512`;
  }
}

/** The `default-model-config` ModelConfig manifest for `provider` at `url`. */
export function modelConfigYaml(provider: KagentProvider, url: string): string {
  const variable = KEY_VARIABLES[provider];
  const secret = variable
    ? `  apiKeySecret: kagent-${provider.toLowerCase()}\n  apiKeySecretKey: ${variable}\n`
    : '';
  return `apiVersion: kagent.dev/v1alpha2
kind: ModelConfig
metadata:
  name: default-model-config
  namespace: kagent
spec:
  provider: ${provider}
  model: ${MODELS[provider]}
${secret}  defaultHeaders:
    ${TEAM_HEADER.name}: ${TEAM_HEADER.value}
${block(provider, url)}
`;
}

/**
 * Two mistakes in `provider`'s ModelConfig, each with the text that replaces the correct one and the word
 * validate must point at and suggest: a misspelt provider, and a misspelt field of the provider's block.
 */
export const MISTAKES: Readonly<
  Record<KagentProvider, { what: string; right: string; wrong: string; problem: string }[]>
> = {
  OpenAI: [
    {
      what: 'provider',
      right: 'provider: OpenAI',
      wrong: 'provider: OpenAl',
      problem: 'spec.provider: unknown provider "OpenAl"; did you mean "OpenAI"?',
    },
    {
      what: 'field',
      right: 'temperature: "0.2"',
      wrong: 'temprature: "0.2"',
      problem: 'spec.openAI.temprature: unknown key "temprature" in openAI; did you mean "temperature"?',
    },
  ],
  Anthropic: [
    {
      what: 'provider',
      right: 'provider: Anthropic',
      wrong: 'provider: Antropic',
      problem: 'spec.provider: unknown provider "Antropic"; did you mean "Anthropic"?',
    },
    {
      what: 'field',
      right: 'maxTokens: 1024',
      wrong: 'maxToken: 1024',
      problem: 'spec.anthropic.maxToken: unknown key "maxToken" in anthropic; did you mean "maxTokens"?',
    },
  ],
  Ollama: [
    {
      what: 'provider',
      right: 'provider: Ollama',
      wrong: 'provider: Olama',
      problem: 'spec.provider: unknown provider "Olama"; did you mean "Ollama"?',
    },
    {
      what: 'field',
      right: 'options:',
      wrong: 'option:',
      problem: 'spec.ollama.option: unknown key "option" in ollama; did you mean "options"?',
    },
  ],
  AzureOpenAI: [
    {
      what: 'provider',
      right: 'provider: AzureOpenAI',
      wrong: 'provider: AzureOpenAi',
      problem: 'spec.provider: unknown provider "AzureOpenAi"; did you mean "AzureOpenAI"?',
    },
    {
      what: 'field',
      right: '  apiVersion: "',
      wrong: '  apiVerison: "',
      problem:
        'spec.azureOpenAI.apiVerison: unknown key "apiVerison" in azureOpenAI; did you mean "apiVersion"?',
    },
  ],
};

/** The environment validate and dev get: the key variable the ModelConfig names. */
export function keyEnv(provider: KagentProvider): Record<string, string> {
  const variable = KEY_VARIABLES[provider];
  const key = KEYS[provider];
  return variable && key ? { [variable]: key } : {};
}

/** What a request of `provider` must hold: its path, its key header, its model and the ModelConfig's setting. */
export function expectedWire(provider: KagentProvider): {
  path: string;
  query: Record<string, string>;
  headers: Record<string, unknown>;
  /** Headers a request must not carry. */
  absentHeaders?: string[];
  body: Record<string, unknown>;
} {
  const team = { [TEAM_HEADER.name]: TEAM_HEADER.value };
  switch (provider) {
    case 'OpenAI':
      return {
        path: '/v1/chat/completions',
        query: {},
        headers: { ...team, authorization: `Bearer ${KEYS.OpenAI}` },
        body: { model: MODELS.OpenAI, temperature: 0.2 },
      };
    case 'Anthropic':
      return {
        path: '/v1/messages',
        query: {},
        // @anthropic-ai/sdk 1.x sends the key as a bearer token (0.x sent x-api-key).
        headers: {
          ...team,
          authorization: `Bearer ${KEYS.Anthropic}`,
          'anthropic-version': expect.any(String),
        },
        body: { model: MODELS.Anthropic, max_tokens: 1024 },
      };
    case 'Ollama':
      // Ollama's OpenAI-compatible API under the host; no key is configured, so the adapter's placeholder.
      return {
        path: '/v1/chat/completions',
        query: {},
        headers: { ...team, authorization: 'Bearer ollama' },
        body: { model: MODELS.Ollama, temperature: 0.3 },
      };
    case 'AzureOpenAI':
      return {
        path: `/openai/deployments/${AZURE_DEPLOYMENT}/chat/completions`,
        query: { 'api-version': AZURE_API_VERSION },
        headers: { ...team, 'api-key': KEYS.AzureOpenAI as string },
        // The key in api-key only, not as a bearer token.
        absentHeaders: ['authorization'],
        body: { max_completion_tokens: 512 },
      };
  }
}

/** What the scripted model reads from a request, in either wire format. */
interface Heard {
  system: string;
  tools: string[];
  /** Answers of this agent earlier in its history. */
  assistantTurns: number;
  toolResults: number;
}

type Json = Record<string, unknown>;
const list = (value: unknown): Json[] => (Array.isArray(value) ? (value as Json[]) : []);
const textOf = (value: unknown): string =>
  typeof value === 'string'
    ? value
    : list(value)
        .map((part) => String(part.text ?? ''))
        .join('\n');

function hear(provider: KagentProvider, body: Json): Heard {
  const messages = list(body.messages);
  const assistantTurns = messages.filter((m) => m.role === 'assistant').length;
  if (provider === 'Anthropic') {
    return {
      system: textOf(body.system),
      tools: list(body.tools).map((t) => String(t.name)),
      assistantTurns,
      toolResults: messages.flatMap((m) => list(m.content)).filter((b) => b.type === 'tool_result').length,
    };
  }
  return {
    system: messages
      .filter((m) => m.role === 'system')
      .map((m) => textOf(m.content))
      .join('\n'),
    tools: list(body.tools).map((t) => String((t.function as Json | undefined)?.name)),
    assistantTurns,
    toolResults: messages.filter((m) => m.role === 'tool').length,
  };
}

const WORKFLOW_TOOL = /_(sequential|parallel|loop)$/;
const isWorkflowTool = (name: string): boolean => name !== 'exit_loop' && WORKFLOW_TOOL.test(name);

/** The scripted model's move for `agent` (see the file's comment). */
function decide(agent: string, heard: Heard): Move {
  const turn = heard.assistantTurns + 1;
  if (heard.toolResults > 0) return { text: `${agent}: done after its tools` };
  const workflows = heard.tools.filter(isWorkflowTool);
  if (workflows.length > 0) {
    return {
      calls: workflows.map((name) => ({ name, args: { request: `${agent} delegates turn ${turn}` } })),
    };
  }
  if (heard.tools.includes('exit_loop') && heard.assistantTurns > 0) {
    return { calls: [{ name: 'exit_loop', args: {} }] };
  }
  return { text: `${agent} answers (turn ${turn})` };
}

function reply(provider: KagentProvider, move: Move, callNo: number): WireReply {
  const calls = 'calls' in move ? move.calls : [];
  if (provider === 'Anthropic') {
    return anthropicMessage({
      blocks:
        'text' in move
          ? [{ text: move.text }]
          : calls.map((c, i) => ({ toolUse: { id: `toolu_${callNo}_${i}`, name: c.name, input: c.args } })),
    });
  }
  return 'text' in move
    ? chatCompletion({ text: move.text })
    : chatCompletion({
        toolCalls: calls.map((c, i) => ({ id: `call_${callNo}_${i}`, name: c.name, args: c.args })),
      });
}

/** Each Agent manifest's `systemMessage` in `dir`, by its `metadata.name`. */
export function systemMessages(dir: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const file of readdirSync(dir).filter((f) => /\.ya?ml$/.test(f))) {
    for (const doc of parseAllDocuments(readFileSync(join(dir, file), 'utf8'))) {
      const data = doc.toJS() as { kind?: string; metadata?: Json; spec?: { declarative?: Json } } | null;
      const message = data?.spec?.declarative?.systemMessage;
      if (data?.kind === 'Agent' && typeof message === 'string') {
        out.set(String(data.metadata?.name), message);
      }
    }
  }
  return out;
}

/** Starts `provider`'s wire server (OpenAI's format for OpenAI, Ollama and Azure; Anthropic's for Anthropic). */
export async function startProviderWire(provider: KagentProvider): Promise<ProviderWire> {
  const calls: AnsweredCall[] = [];
  let agents = new Map<string, string>();
  const fallback = (request: RecordedRequest): WireReply => {
    const heard = hear(provider, request.body);
    const agent = [...agents].find(([, message]) => heard.system.includes(message))?.[0] ?? '?';
    const move = decide(agent, heard);
    calls.push({ agent, request, move });
    return reply(provider, move, calls.length);
  };
  const server =
    provider === 'Anthropic' ? await startAnthropicWire({ fallback }) : await startOpenAIWire({ fallback });
  return {
    provider,
    server,
    calls,
    serve: (dir) => {
      agents = systemMessages(dir);
      calls.length = 0;
      server.reset();
    },
    close: () => server.close(),
  };
}
