/**
 * kagent `ModelConfig` manifests read with the Agents of the same path: each declares the model name its
 * `metadata.name` gives, which Agents name with `spec.declarative.modelConfig`.
 *
 * - A Gemini one (`spec.provider: Gemini`, `spec.model: gemini-…`) stands for that Gemini model: an Agent naming it
 *   is built with that id, which every engine resolves (with its GEMINI_API_KEY) — unless a model of that name is
 *   registered in code, which wins.
 * - Another provider (OpenAI, Anthropic, …) agentloom cannot call: an Agent naming it is a problem, unless a model of
 *   that name is registered in code.
 */
import { isGeminiId, type Registries } from '../shared/registries.js';
import type { YamlDocument } from '../shared/yaml-source.js';

/** What one ModelConfig says (undefined: absent or not text). */
interface ModelConfigDeclaration {
  provider: string | undefined;
  model: string | undefined;
  /** `file:line` of the manifest, for messages. */
  at: string;
}

function text(value: unknown): string | undefined {
  return typeof value === 'string' ? value : undefined;
}

function field(value: unknown, key: string): unknown {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)[key]
    : undefined;
}

/** The ModelConfigs of a path, by name. */
export class ModelConfigs {
  private constructor(private readonly byName: ReadonlyMap<string, ModelConfigDeclaration>) {}

  /** Reads the ModelConfig manifests among `sources` (the first of a name counts). */
  static read(sources: readonly YamlDocument[]): ModelConfigs {
    const byName = new Map<string, ModelConfigDeclaration>();
    for (const source of sources) {
      const data = source.data();
      const name = text(field(field(data, 'metadata'), 'name'));
      if (name === undefined || byName.has(name)) continue;
      const spec = field(data, 'spec');
      const { line } = source.position([]);
      byName.set(name, {
        provider: text(field(spec, 'provider')),
        model: text(field(spec, 'model')),
        at: `${source.file}:${line}`,
      });
    }
    return new ModelConfigs(byName);
  }

  /** None declared. */
  static readonly none = new ModelConfigs(new Map());

  /** The Gemini id a usable ModelConfig named `name` stands for. */
  private geminiOf(name: string): string | undefined {
    const declared = this.byName.get(name);
    return declared?.provider === 'Gemini' && declared.model !== undefined && isGeminiId(declared.model)
      ? declared.model
      : undefined;
  }

  /** The names of the usable (Gemini) ModelConfigs. */
  usable(): string[] {
    return [...this.byName.keys()].filter((name) => this.geminiOf(name) !== undefined);
  }

  /** Why the ModelConfig named `name` cannot serve, or undefined (usable, or not declared here). */
  unusable(name: string): string | undefined {
    const declared = this.byName.get(name);
    if (!declared || this.geminiOf(name) !== undefined) return undefined;
    const says =
      declared.provider === 'Gemini'
        ? `has no Gemini model id (spec.model: ${declared.model ?? 'missing'})`
        : `uses provider ${declared.provider ?? '(none)'}, which agentloom cannot call`;
    return `ModelConfig "${name}" (${declared.at}) ${says}: write provider: Gemini and model: gemini-2.5-flash there, or register a model "${name}" in code and name that module with validate --registry`;
  }

  /**
   * The model an Agent naming `modelConfig` is built with: the name itself when a model of that name is
   * registered in code (or nothing declares it), else the Gemini id its ModelConfig stands for.
   */
  modelFor(modelConfig: string, registries: Registries): string {
    if (Object.hasOwn(registries.models ?? {}, modelConfig)) return modelConfig;
    return this.geminiOf(modelConfig) ?? modelConfig;
  }
}
