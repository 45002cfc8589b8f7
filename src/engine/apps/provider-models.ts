/**
 * Models named by a provider id (`openai/gpt-4.1`, `anthropic/claude-sonnet-4-5`, `ollama/llama3.2`,
 * `azure/<deployment>`, `gemini-2.5-flash`): built once per id from the keys and endpoints of the environment.
 * A worker builds every id its apps name when it starts, so one whose key is missing refuses to start and names
 * the variable to set, instead of failing each run that reaches the agent.
 */
import { LlmAgent } from '../../agents/llm/llm-agent.js';
import { AgentloomError } from '../../core/errors.js';
import { createModelForId } from '../../models/providers/model-factory.js';
import { parseModelId, type ModelEnv } from '../../models/model-ids.js';
import type { Model } from '../../models/model.js';
import type { RegisteredApp } from './registry.js';

/** Where an app names a model by a provider id that nothing registers under that name. */
interface ProviderModelUse {
  app: string;
  agent: string;
  id: string;
}

/** The provider ids the apps' LlmAgents name (by string) that `registered` does not hold. */
export function providerModelUses(
  apps: Iterable<RegisteredApp>,
  registered: ReadonlyMap<string, Model>,
): ProviderModelUse[] {
  const uses: ProviderModelUse[] = [];
  for (const app of apps) {
    for (const agent of app.agents.values()) {
      if (!(agent instanceof LlmAgent)) continue;
      const id = agent.options.model;
      if (typeof id !== 'string' || registered.has(id) || !parseModelId(id)) continue;
      uses.push({ app: app.name, agent: agent.name, id });
    }
  }
  return uses;
}

/**
 * Builds the model of every provider id the apps name (see {@link providerModelUses}).
 * @throws AgentloomError `CONFIG` listing every id that cannot be built, each with the variable to set.
 */
export function buildProviderModels(
  apps: Iterable<RegisteredApp>,
  registered: ReadonlyMap<string, Model>,
  env: ModelEnv,
): Map<string, Model> {
  const built = new Map<string, Model>();
  const problems: string[] = [];
  for (const use of providerModelUses(apps, registered)) {
    if (built.has(use.id)) continue;
    try {
      built.set(use.id, createModelForId(use.id, env));
    } catch (err) {
      if (!(err instanceof AgentloomError)) throw err;
      problems.push(`app "${use.app}", agent "${use.agent}": ${err.message}`);
    }
  }
  if (problems.length > 0) {
    throw new AgentloomError(
      'CONFIG',
      `cannot serve these apps' models:\n${problems.join('\n')}\n` +
        '(or register a model under that name: createEngine({ models: { "<id>": … } }))',
      { details: { problems } },
    );
  }
  return built;
}
