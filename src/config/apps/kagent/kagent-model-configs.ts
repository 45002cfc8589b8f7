/**
 * kagent `ModelConfig` manifests read with the Agents of the same path: each declares the model its
 * `metadata.name` gives, which Agents name with `spec.declarative.modelConfig` (a model registered in code under
 * that name wins).
 *
 * - Providers OpenAI (kagent's default), AzureOpenAI, Anthropic, Ollama and Gemini, with kagent's field names
 *   (kagent-model-config-schema.ts); an Agent naming one is built with that model, configured from its block
 *   (base URL, endpoint, generation settings) and `defaultHeaders`.
 * - The key: `apiKeySecret` + `apiKeySecretKey` name a Kubernetes Secret and its key; agentloom reads the key from
 *   the environment variable named by `apiKeySecretKey`, as if the Secret were mounted with envFrom. Without them,
 *   the provider's own variable (OPENAI_API_KEY, AZURE_OPENAI_API_KEY, ANTHROPIC_API_KEY, GEMINI_API_KEY). A
 *   missing variable is a problem at load (validate says so too), naming it. Ollama needs no key.
 * - A plain Gemini ModelConfig (no Secret, no headers) stands for its Gemini id, which the engine serves with its
 *   GEMINI_API_KEY, as before.
 *
 * Problems carry the manifest's file, line and column, and say what to write.
 */
import type * as ModelsIndex from '../../../models/index.js';
import type { Model } from '../../../models/model.js';
import type { ConfigProblem, YamlDocument, YamlPath } from '../shared/yaml-source.js';
import type { Registries } from '../shared/registries.js';
import { isSensitiveName, looksLikeSecret, SecretEnv, variableNameProblem } from '../shared/secret-refs.js';
import {
  modelConfigSchema,
  OLLAMA_OPTIONS,
  PROVIDER_BLOCKS,
  type ModelConfigSpec,
} from './kagent-model-config-schema.js';

/** The model package, loaded only when a folder declares a model to build (the SDKs are not small). */
type ModelsModule = typeof ModelsIndex;

/** What one ModelConfig declares. */
interface ModelConfigDeclaration {
  /** What an Agent naming it is built with; undefined when the manifest has problems. */
  model?: Model | string;
  problems: ConfigProblem[];
}

const DEFAULT_KEY_VARIABLES: Readonly<Record<ModelConfigSpec['provider'], string | undefined>> = {
  OpenAI: 'OPENAI_API_KEY',
  AzureOpenAI: 'AZURE_OPENAI_API_KEY',
  Anthropic: 'ANTHROPIC_API_KEY',
  Ollama: undefined,
  Gemini: 'GEMINI_API_KEY',
};

function field(value: unknown, key: string): unknown {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)[key]
    : undefined;
}

/** The rules kagent's CRD states across fields (its CEL validations). */
function crossFieldProblems(spec: ModelConfigSpec, report: (path: YamlPath, message: string) => void): void {
  for (const [provider, block] of Object.entries(PROVIDER_BLOCKS)) {
    if (spec[block] !== undefined && spec.provider !== provider) {
      report(
        ['spec', block],
        `${block} is for provider ${provider}; this ModelConfig's provider is ${spec.provider}: remove ${block} or write provider: ${provider}`,
      );
    }
  }
  if (spec.apiKeySecretKey !== undefined && spec.apiKeySecret === undefined) {
    report(
      ['spec', 'apiKeySecretKey'],
      'apiKeySecretKey needs apiKeySecret: name the Secret too, e.g. apiKeySecret: kagent-openai',
    );
  }
  if (spec.apiKeySecret !== undefined && spec.apiKeySecretKey === undefined) {
    report(
      ['spec', 'apiKeySecret'],
      'apiKeySecret needs apiKeySecretKey: name the key, e.g. apiKeySecretKey: OPENAI_API_KEY',
    );
  }
  if (spec.provider === 'AzureOpenAI' && spec.azureOpenAI === undefined) {
    report(
      ['spec', 'provider'],
      'provider AzureOpenAI needs azureOpenAI: { azureEndpoint: https://…openai.azure.com, apiVersion: 2024-10-21 }',
    );
  }
}

/** The generation settings a ModelConfig fixes (generateContentConfig keys), and the adapter's per-call timeout. */
function settingsOf(spec: ModelConfigSpec): Record<string, unknown> {
  const block = spec.openAI ?? spec.anthropic ?? spec.azureOpenAI;
  const settings: Record<string, unknown> = {};
  const put = (key: string, value: unknown): void => {
    if (value !== undefined) settings[key] = value;
  };
  put('temperature', block?.temperature);
  put('topP', block?.topP);
  put('maxOutputTokens', block?.maxTokens);
  put('topK', spec.anthropic?.topK);
  put('frequencyPenalty', spec.openAI?.frequencyPenalty);
  put('presencePenalty', spec.openAI?.presencePenalty);
  put('seed', spec.openAI?.seed);
  put('reasoningEffort', spec.openAI?.reasoningEffort);
  for (const [option, value] of Object.entries(spec.ollama?.options ?? {})) {
    const key = OLLAMA_OPTIONS[option as keyof typeof OLLAMA_OPTIONS];
    put(key, key === 'stopSequences' ? String(value).split(',') : Number(value));
  }
  return settings;
}

/** Builds the ModelConfig's model with `key` (undefined: Ollama). */
function build(models: ModelsModule, spec: ModelConfigSpec, key: string | undefined): Model {
  const headers = spec.defaultHeaders;
  const common = { ...(headers ? { defaultHeaders: headers } : {}) };
  let model: Model;
  switch (spec.provider) {
    case 'OpenAI':
      model = new models.OpenAIModel({
        ...common,
        model: spec.model,
        apiKey: key,
        ...(spec.openAI?.baseUrl ? { baseURL: spec.openAI.baseUrl } : {}),
        ...(spec.openAI?.organization ? { organization: spec.openAI.organization } : {}),
        ...(spec.openAI?.timeout ? { timeoutMs: spec.openAI.timeout * 1000 } : {}),
      });
      break;
    case 'AzureOpenAI': {
      const azure = spec.azureOpenAI as NonNullable<ModelConfigSpec['azureOpenAI']>;
      model = new models.OpenAIModel({
        ...common,
        model: spec.model,
        apiKey: key,
        azure: {
          endpoint: azure.azureEndpoint,
          apiVersion: azure.apiVersion,
          deployment: azure.azureDeployment ?? spec.model,
        },
      });
      break;
    }
    case 'Anthropic':
      model = new models.AnthropicModel({
        ...common,
        model: spec.model,
        apiKey: key,
        ...(spec.anthropic?.baseUrl ? { baseURL: spec.anthropic.baseUrl } : {}),
      });
      break;
    case 'Ollama':
      model = models.ollamaModel(spec.model, spec.ollama?.host, common);
      break;
    case 'Gemini':
      model = new models.Gemini({
        model: spec.model,
        apiKey: key,
        ...(headers ? { httpOptions: { headers } } : {}),
      });
      break;
  }
  const settings = settingsOf(spec);
  return Object.keys(settings).length > 0 ? models.withGenerationDefaults(model, settings) : model;
}

/** Reads one manifest; every problem is collected. */
function declare(
  source: YamlDocument,
  secrets: SecretEnv,
  models: () => Promise<ModelsModule>,
): Promise<ModelConfigDeclaration> | ModelConfigDeclaration {
  const parsed = modelConfigSchema.safeParse(source.data());
  if (!parsed.success)
    return { problems: source.zodProblems([], modelConfigSchema, parsed.error, 'the ModelConfig') };
  const problems: ConfigProblem[] = [];
  const report = (path: YamlPath, message: string) => problems.push(source.problem(path, message));
  const { spec } = parsed.data;
  crossFieldProblems(spec, report);
  if (spec.apiKeySecretKey !== undefined) {
    const problem = variableNameProblem(spec.apiKeySecretKey, 'apiKeySecretKey', 'OPENAI_API_KEY');
    if (problem) report(['spec', 'apiKeySecretKey'], problem);
  }
  if (spec.apiKeySecret !== undefined && looksLikeSecret(spec.apiKeySecret)) {
    report(
      ['spec', 'apiKeySecret'],
      "apiKeySecret holds what looks like the key itself: write the Secret's name here (e.g. apiKeySecret: kagent-openai) and the variable holding the key in apiKeySecretKey",
    );
  }
  for (const [header, value] of Object.entries(spec.defaultHeaders ?? {})) {
    if (isSensitiveName(header) || looksLikeSecret(value)) {
      report(
        ['spec', 'defaultHeaders', header],
        `header ${header} carries a credential, which is never written in a manifest: give the key with apiKeySecret and apiKeySecretKey`,
      );
    }
  }
  if (problems.length > 0) return { problems };
  const plainGemini = spec.provider === 'Gemini' && !spec.apiKeySecret && !spec.defaultHeaders;
  if (plainGemini) return { model: spec.model, problems };
  const variable = spec.apiKeySecretKey ?? DEFAULT_KEY_VARIABLES[spec.provider];
  let key =
    variable === undefined
      ? undefined
      : (secrets.value(variable) ??
        (spec.provider === 'Gemini' && !spec.apiKeySecretKey ? secrets.value('GOOGLE_API_KEY') : undefined));
  if (variable !== undefined && !key) {
    const written = field(field(source.data(), 'spec'), 'provider') !== undefined;
    const where = ['spec', spec.apiKeySecretKey ? 'apiKeySecretKey' : written ? 'provider' : 'model'];
    const how = spec.apiKeySecretKey
      ? `the key of Secret ${spec.apiKeySecret} is read from the environment variable apiKeySecretKey names`
      : `provider ${spec.provider} reads its key from ${variable}, or from the variable apiKeySecretKey names`;
    const problem = source.problem(where, `the environment has no variable ${variable} (${how}): set it`);
    // validate --no-env: a warning, and the model is built with a stand-in key (it is never called).
    if (!secrets.missing(problem, problems)) return { problems };
    key = `<${variable} unset>`;
  }
  return models().then((m) => ({ model: build(m, spec, key), problems }));
}

/** The ModelConfigs of a path, by name. */
export class ModelConfigs {
  private constructor(private readonly byName: ReadonlyMap<string, ModelConfigDeclaration>) {}

  /** Reads the ModelConfig manifests among `sources` (the first of a name counts), building their models. */
  static async read(
    sources: readonly YamlDocument[],
    secrets: SecretEnv = new SecretEnv(),
  ): Promise<ModelConfigs> {
    const byName = new Map<string, ModelConfigDeclaration>();
    let loaded: Promise<ModelsModule> | undefined;
    const models = () => (loaded ??= import('../../../models/index.js'));
    for (const source of sources) {
      const name = field(field(source.data(), 'metadata'), 'name');
      if (typeof name !== 'string' || byName.has(name)) continue;
      byName.set(name, await declare(source, secrets, models));
    }
    return new ModelConfigs(byName);
  }

  /** None declared. */
  static readonly none = new ModelConfigs(new Map());

  /** Problems of every manifest. */
  problems(): ConfigProblem[] {
    return [...this.byName.values()].flatMap((d) => d.problems);
  }

  /** The names declared (one with problems is reported on its own manifest, not on the Agents naming it). */
  names(): string[] {
    return [...this.byName.keys()];
  }

  /**
   * The model an Agent naming `modelConfig` is built with: the name itself when a model of that name is
   * registered in code (or nothing declares it), else what its ModelConfig declares.
   */
  modelFor(modelConfig: string, registries: Registries): Model | string {
    if (Object.hasOwn(registries.models ?? {}, modelConfig)) return modelConfig;
    return this.byName.get(modelConfig)?.model ?? modelConfig;
  }
}
