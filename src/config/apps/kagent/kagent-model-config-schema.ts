/**
 * The zod schema of a kagent `ModelConfig` spec (kagent.dev/v1alpha2, kagent's ModelConfigSpec field names): the
 * provider, the model, the API key's Secret (`apiKeySecret` + `apiKeySecretKey`), `defaultHeaders`, and one block
 * per provider. kagent writes sampling settings as text ("0.7"); numbers are accepted too. Unknown fields are
 * errors (with a "did you mean"); kagent fields agentloom cannot honour are errors that say so.
 */
import * as z from 'zod';
import { suggest } from '../shared/yaml-source.js';

/** The providers agentloom calls. */
export const SUPPORTED_PROVIDERS = ['OpenAI', 'AzureOpenAI', 'Anthropic', 'Ollama', 'Gemini'] as const;

/** kagent's other providers: known, not served. */
const OTHER_PROVIDERS = ['GeminiVertexAI', 'AnthropicVertexAI', 'Bedrock', 'SAPAICore', 'Foundry'];

/** The spec key of each provider's block. */
export const PROVIDER_BLOCKS = {
  OpenAI: 'openAI',
  AzureOpenAI: 'azureOpenAI',
  Anthropic: 'anthropic',
  Ollama: 'ollama',
  Gemini: 'gemini',
} as const;

/** Ollama `options` that its OpenAI-compatible API (the one agentloom calls) takes, and where they go. */
export const OLLAMA_OPTIONS = {
  temperature: 'temperature',
  top_p: 'topP',
  top_k: 'topK',
  seed: 'seed',
  num_predict: 'maxOutputTokens',
  stop: 'stopSequences',
} as const;

const NUMBER_TEXT = /^-?\d+(\.\d+)?$/;

/** A number, or kagent's text form of one ("0.7"). */
const decimal = (key: string, example: string) => {
  const message = `write ${key} as a number, e.g. ${key}: "${example}"`;
  return z
    .union([z.number(), z.string().regex(NUMBER_TEXT, message).transform(Number)], { error: message })
    .optional();
};

const whole = (key: string, example: number) =>
  z
    .number({ error: `write ${key} as a whole number, e.g. ${key}: ${example}` })
    .int(`write ${key} as a whole number, e.g. ${key}: ${example}`)
    .min(1, `write ${key} as a whole number of at least 1, e.g. ${key}: ${example}`)
    .optional();

const url = (key: string, example: string) =>
  z
    .string({ error: `write ${key} as an http(s) URL, e.g. ${key}: ${example}` })
    .regex(/^https?:\/\/\S+$/, `write ${key} as an http(s) URL, e.g. ${key}: ${example}`)
    .optional();

const text = (key: string, example: string) =>
  z.string({ error: `write ${key} as text, e.g. ${key}: ${example}` }).min(1, `write ${key}: ${example}`);

/** A kagent field agentloom does not implement: present, it is an error saying what to do instead. */
const unsupported = (what: string) => z.never({ error: `agentloom does not support ${what}` }).optional();

const openAIBlock = z.strictObject({
  baseUrl: url('baseUrl', 'https://api.openai.com/v1'),
  organization: text('organization', 'org-123').optional(),
  temperature: decimal('temperature', '0.7'),
  maxTokens: whole('maxTokens', 1024),
  topP: decimal('topP', '0.9'),
  frequencyPenalty: decimal('frequencyPenalty', '0.5'),
  presencePenalty: decimal('presencePenalty', '0.5'),
  seed: z.number({ error: 'write seed as a whole number, e.g. seed: 42' }).int().optional(),
  n: z.literal(1, { error: 'an agent takes one answer per call: remove n (or write n: 1)' }).optional(),
  timeout: whole('timeout', 60),
  reasoningEffort: z
    .enum(['none', 'minimal', 'low', 'medium', 'high'], {
      error: 'write reasoningEffort: none, minimal, low, medium or high',
    })
    .optional(),
  tokenExchange: unsupported('openAI.tokenExchange: give the key with apiKeySecret and apiKeySecretKey'),
});

const anthropicBlock = z.strictObject({
  baseUrl: url('baseUrl', 'https://api.anthropic.com'),
  maxTokens: whole('maxTokens', 4096),
  temperature: decimal('temperature', '0.7'),
  topP: decimal('topP', '0.9'),
  topK: whole('topK', 40),
});

const azureOpenAIBlock = z.strictObject({
  azureEndpoint: url('azureEndpoint', 'https://my-resource.openai.azure.com').unwrap(),
  apiVersion: text('apiVersion', '2024-10-21'),
  azureDeployment: text('azureDeployment', 'my-gpt-4o').optional(),
  azureAdToken: unsupported('azureOpenAI.azureAdToken: give the key with apiKeySecret and apiKeySecretKey'),
  temperature: decimal('temperature', '0.7'),
  maxTokens: whole('maxTokens', 1024),
  topP: decimal('topP', '0.9'),
});

const ollamaBlock = z.strictObject({
  host: z.string({ error: 'write host as the Ollama address, e.g. host: http://localhost:11434' }).optional(),
  options: z
    .record(
      z.string(),
      z.union([z.string(), z.number()], { error: 'write each option as text, e.g. temperature: "0.2"' }),
      { error: 'write options as a mapping, e.g. options: { temperature: "0.2" }' },
    )
    .superRefine((options, ctx) => {
      for (const key of Object.keys(options)) {
        if (Object.hasOwn(OLLAMA_OPTIONS, key)) continue;
        ctx.addIssue({
          code: 'custom',
          path: [key],
          message: `Ollama option "${key}" cannot be set through the OpenAI-compatible API agentloom calls; ${suggest(key, Object.keys(OLLAMA_OPTIONS))}`,
        });
      }
    })
    .optional(),
});

/** A ModelConfig's `spec`. */
export const modelConfigSpecSchema = z.strictObject({
  model: text('model', 'gpt-4.1'),
  provider: z
    .enum(SUPPORTED_PROVIDERS, {
      error: (issue) => {
        const p = String(issue.input);
        return OTHER_PROVIDERS.includes(p)
          ? `provider ${p} is not supported by agentloom: write one of ${SUPPORTED_PROVIDERS.join(', ')}`
          : `unknown provider "${p}"; ${suggest(p, SUPPORTED_PROVIDERS)}`;
      },
    })
    .default('OpenAI'),
  apiKeySecret: text('apiKeySecret', 'kagent-openai').optional(),
  apiKeySecretKey: text('apiKeySecretKey', 'OPENAI_API_KEY').optional(),
  apiKeyPassthrough: z
    .literal(false, {
      error:
        'agentloom does not pass the caller’s token to the model: give the key with apiKeySecret and apiKeySecretKey',
    })
    .optional(),
  defaultHeaders: z
    .record(z.string(), z.string({ error: 'write each header value as text' }), {
      error: 'write defaultHeaders as a mapping of header names to text',
    })
    .optional(),
  openAI: openAIBlock.optional(),
  anthropic: anthropicBlock.optional(),
  azureOpenAI: azureOpenAIBlock.optional(),
  ollama: ollamaBlock.optional(),
  gemini: z.strictObject({}).optional(),
  geminiVertexAI: unsupported('provider GeminiVertexAI: use provider Gemini with an API key'),
  anthropicVertexAI: unsupported('provider AnthropicVertexAI: use provider Anthropic'),
  bedrock: unsupported('provider Bedrock'),
  sapAICore: unsupported('provider SAPAICore'),
  foundry: unsupported('provider Foundry: use provider AzureOpenAI'),
  tls: unsupported('tls settings: trust a private CA with NODE_EXTRA_CA_CERTS instead'),
});

/** A parsed ModelConfig spec. */
export type ModelConfigSpec = z.infer<typeof modelConfigSpecSchema>;

/** The whole manifest (only `metadata.name` and `spec` are read). */
export const modelConfigSchema = z.object({
  metadata: z.object({ name: text('name', 'default-model-config') }).loose(),
  spec: modelConfigSpecSchema,
});
