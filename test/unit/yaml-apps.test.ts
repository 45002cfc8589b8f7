/**
 * agentloom's YAML format builds the same agent classes as code: the CONTRACT example (examples/writer.yaml) has
 * the definition hash of the same tree written in code, every data option of an LlmAgent reaches its options,
 * sub-agents may be names or inline definitions, and agent tools become AgentTools.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import * as z from 'zod';
import { loadAppsFromYaml } from '../../src/config/apps/load-apps.js';
import { loadAppsModule } from '../../src/engine/apps/apps-module.js';
import {
  AgentTool,
  type AgentloomError,
  exitLoop,
  LlmAgent,
  LoopAgent,
  ParallelAgent,
  registerApps,
  RemoteA2aAgent,
  ScriptedModel,
  SequentialAgent,
  type BaseAgent,
} from '../../src/index.js';

const dir = mkdtempSync(join(tmpdir(), 'agentloom-yaml-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let files = 0;

function yamlFile(text: string): string {
  const path = join(dir, `app${files++}.yaml`);
  writeFileSync(path, text);
  return path;
}

function hashOf(name: string, agent: BaseAgent): string {
  return registerApps([{ name, agent }]).get(name)?.definitionHash ?? '';
}

/** examples/writer.yaml, written in code. */
function writerInCode(maxIterations = 5): SequentialAgent {
  const model = 'gemini-2.5-flash';
  const notes = (where: string) =>
    `Find what the ${where} says about the topic the user gives. Answer with short notes.`;
  return new SequentialAgent({
    name: 'writer_pipeline',
    description: 'Researches a topic, then drafts and refines a post about it',
    subAgents: [
      new ParallelAgent({
        name: 'research',
        subAgents: [
          new LlmAgent({ name: 'research_web', model, instruction: notes('web'), outputKey: 'web_notes' }),
          new LlmAgent({
            name: 'research_docs',
            model,
            instruction: notes('documentation'),
            outputKey: 'doc_notes',
          }),
        ],
      }),
      new LoopAgent({
        name: 'refine',
        maxIterations,
        subAgents: [
          new LlmAgent({
            name: 'drafter',
            model,
            outputKey: 'draft',
            instruction:
              'Write a draft using {web_notes} and {doc_notes}. Revise it if a critique exists: {critique?}',
          }),
          new LlmAgent({
            name: 'critic',
            model,
            outputKey: 'critique',
            tools: [exitLoop],
            instruction: 'Critique the draft: {draft}. If it is good enough, call exit_loop.',
          }),
        ],
      }),
    ],
  });
}

describe('the native YAML format', () => {
  it('loads examples/writer.yaml into the classes of code, with the same definition hash', async () => {
    const { apps, errors } = await loadAppsFromYaml('examples/writer.yaml', { tools: {}, models: {} });
    expect(errors).toEqual([]);
    expect(apps.map((a) => a.name)).toEqual(['writer']);
    const root = apps[0]?.agent as SequentialAgent;
    expect(root).toBeInstanceOf(SequentialAgent);
    const [research, refine] = root.subAgents;
    expect(research).toBeInstanceOf(ParallelAgent);
    expect(refine).toBeInstanceOf(LoopAgent);
    expect((refine as LoopAgent).maxIterations).toBe(5);
    const critic = root.findAgent('critic') as LlmAgent;
    expect(critic).toBeInstanceOf(LlmAgent);
    expect(critic.options).toMatchObject({
      model: 'gemini-2.5-flash',
      outputKey: 'critique',
      tools: ['exit_loop'],
    });
    expect(critic.options.instruction).toBe(
      'Critique the draft: {draft}. If it is good enough, call exit_loop.',
    );

    const code = writerInCode();
    expect(hashOf('writer', root)).toBe(hashOf('writer', code));
    expect(root.definition()).toEqual(code.definition());
    // Not only the hashed structure: the options of each agent are those of the code tree.
    for (const name of ['research_web', 'research_docs', 'drafter', 'critic']) {
      const fromYaml = (root.findAgent(name) as LlmAgent).options;
      const { tools, ...fromCode } = (code.findAgent(name) as LlmAgent).options;
      expect(fromYaml).toEqual({
        ...fromCode,
        ...(tools ? { tools: tools.map((t) => (typeof t === 'string' ? t : t.name)) } : {}),
      });
    }
    // The comparison can fail: one structural difference changes the hash.
    expect(hashOf('writer', root)).not.toBe(hashOf('writer', writerInCode(6)));
  });

  it('gives every LlmAgent data option of SEMANTICS §3 to the LlmAgent', async () => {
    const path = yamlFile(`app: full
agents:
  - name: assistant
    type: LlmAgent
    description: Answers questions
    model: my_model
    instruction: 'Answer about {topic}'
    globalInstruction: Be brief
    staticInstruction: You are helpful
    tools: [exit_loop, lookup]
    outputKey: answer
    outputSchema:
      type: object
      properties: { title: { type: string }, score: { type: integer } }
      required: [title]
    includeContents: none
    maxIterations: 3
    generateContentConfig: { temperature: 0.2, topP: 0.9 }
    stream: true
    modelTimeoutMs: 120000
    maxStepMs: 60000
    disallowTransferToParent: true
    disallowTransferToPeers: true
    disableTransfer: true
`);
    const model = new ScriptedModel({ respond: () => 'x' });
    const { apps } = await loadAppsFromYaml(path, {
      models: { my_model: model },
      tools: { lookup: exitLoop },
    });
    const agent = apps[0]?.agent as LlmAgent;
    const { outputSchema, ...options } = agent.options;
    expect(options).toEqual({
      name: 'assistant',
      description: 'Answers questions',
      model: 'my_model',
      instruction: 'Answer about {topic}',
      globalInstruction: 'Be brief',
      staticInstruction: 'You are helpful',
      tools: ['exit_loop', 'lookup'],
      outputKey: 'answer',
      includeContents: 'none',
      maxIterations: 3,
      generateContentConfig: { temperature: 0.2, topP: 0.9 },
      stream: true,
      modelTimeoutMs: 120000,
      maxStepMs: 60000,
      disallowTransferToParent: true,
      disallowTransferToPeers: true,
      disableTransfer: true,
    });
    expect(agent.maxStepMs).toBe(60000);
    // outputSchema is the JSON Schema as zod.
    expect(outputSchema?.safeParse({ title: 'a', score: 2 }).success).toBe(true);
    expect(outputSchema?.safeParse({ score: 2 }).success).toBe(false);
    expect(outputSchema?.safeParse({ title: 'a', score: 2.5 }).success).toBe(false);
    expect(z.toJSONSchema(outputSchema as z.ZodType)).toMatchObject({ required: ['title'] });
  });

  it('resolves sub-agents by name or inline, infers the root, and builds agent tools', async () => {
    const path = yamlFile(`app: helpdesk
agents:
  - name: triage
    model: gemini-2.5-flash
    subAgents: [billing, { name: tech, model: gemini-2.5-flash }]
    tools:
      - { agent: lookup_agent, skipSummarization: true }
      - agent: { name: summariser, model: gemini-2.5-flash }
  - name: billing
    model: gemini-2.5-flash
  - name: lookup_agent
    type: SequentialAgent
    subAgents: [{ name: fetch, model: gemini-2.5-flash }]
`);
    const { apps } = await loadAppsFromYaml(path, {});
    const root = apps[0]?.agent as LlmAgent;
    expect(root.name).toBe('triage');
    expect(root.subAgents.map((a) => a.name)).toEqual(['billing', 'tech']);
    const tools = root.options.tools as AgentTool[];
    expect(tools.map((t) => t.constructor)).toEqual([AgentTool, AgentTool]);
    expect(tools.map((t) => t.agent.name)).toEqual(['lookup_agent', 'summariser']);
    expect(tools[0]?.agent).toBeInstanceOf(SequentialAgent);
    // The registry indexes tool agents too: every agent of the file can run.
    expect([...(registerApps(apps).get('helpdesk')?.agents.keys() ?? [])].sort()).toEqual(
      ['billing', 'fetch', 'lookup_agent', 'summariser', 'tech', 'triage'].sort(),
    );
  });

  it('defaults LoopAgent maxIterations to 5 and a missing type to LlmAgent', async () => {
    const path = yamlFile(`app: loop
root: again
agents:
  - { name: again, type: LoopAgent, subAgents: [step] }
  - { name: step, model: gemini-2.5-flash }
`);
    const { apps } = await loadAppsFromYaml(path, {});
    const loop = apps[0]?.agent as LoopAgent;
    expect(loop.maxIterations).toBe(5);
    expect(loop.subAgents[0]).toBeInstanceOf(LlmAgent);
  });

  it('builds a RemoteA2aAgent from type: RemoteA2aAgent with its card URL, headers, timeout and outputKey', async () => {
    const path = yamlFile(`app: remote
root: pipeline
agents:
  - { name: pipeline, type: SequentialAgent, subAgents: [reviewer] }
  - name: reviewer
    type: RemoteA2aAgent
    description: reviews drafts
    agentCard: http://127.0.0.1:9/a2a/review
    headers: { authorization: { valueFrom: { env: REVIEW_AUTHORIZATION } }, x-team: docs }
    timeoutMs: 60000
    outputKey: review
    sideEffects: unsafe
`);
    const { apps } = await loadAppsFromYaml(path, {}, { env: { REVIEW_AUTHORIZATION: 'Bearer t0k3n' } });
    const remote = apps[0]?.agent.subAgents[0] as RemoteA2aAgent;
    expect(remote).toBeInstanceOf(RemoteA2aAgent);
    expect(remote).toMatchObject({
      name: 'reviewer',
      description: 'reviews drafts',
      agentCard: 'http://127.0.0.1:9/a2a/review',
      headers: { authorization: 'Bearer t0k3n', 'x-team': 'docs' },
      timeoutMs: 60000,
      outputKey: 'review',
      sideEffects: 'unsafe',
    });
    // The same tree in code has the same definition hash; the URL and the header values are not part of it.
    const inCode = new SequentialAgent({
      name: 'pipeline',
      subAgents: [
        new RemoteA2aAgent({
          name: 'reviewer',
          description: 'reviews drafts',
          agentCard: 'http://reviews.elsewhere:8080/a2a/review',
          outputKey: 'review',
        }),
      ],
    });
    expect(hashOf('remote', apps[0]!.agent)).toBe(hashOf('remote', inCode));
  });

  it('reads a folder: one app per native document, the kagent manifests as one more app', async () => {
    const folder = mkdtempSync(join(dir, 'folder-'));
    writeFileSync(
      join(folder, 'a.yml'),
      'app: one\nagents: [{ name: a, model: gemini-2.5-flash }]\n---\napp: two\nagents: [{ name: b, model: gemini-2.5-flash }]\n',
    );
    writeFileSync(
      join(folder, 'k.yaml'),
      'apiVersion: kagent.dev/v1alpha2\nkind: Agent\nmetadata: { name: k-agent }\nspec: { declarative: { systemMessage: hi, modelConfig: gemini-2.5-flash } }\n',
    );
    writeFileSync(join(folder, 'notes.txt'), 'not yaml');
    const { apps } = await loadAppsFromYaml(folder, {});
    expect(apps.map((a) => [a.name, a.agent.name])).toEqual([
      ['one', 'a'],
      ['two', 'b'],
      ['k-agent', 'k_agent'],
    ]);
  });

  it('checks names without registries as an engine given no tools or models has them: exit_loop, Gemini ids', async () => {
    const path = yamlFile('app: x\nagents: [{ name: a, model: somewhere, tools: [search] }]\n');
    for (const registries of [undefined, {}, { tools: {}, models: {} }]) {
      const err = (await loadAppsFromYaml(path, registries).catch((e: unknown) => e)) as AgentloomError;
      expect(err.code).toBe('VALIDATION');
      expect(err.message).toContain('unknown model "somewhere"');
      expect(err.message).toContain('unknown tool "search" (known: exit_loop)');
    }
    const fine = yamlFile('app: y\nagents: [{ name: a, model: gemini-2.5-flash, tools: [exit_loop] }]\n');
    const { apps } = await loadAppsFromYaml(fine);
    expect((apps[0]?.agent as LlmAgent).options).toMatchObject({
      model: 'gemini-2.5-flash',
      tools: ['exit_loop'],
    });
  });

  it("resolves a kagent modelConfig by the folder's Gemini ModelConfig, unless a model of that name is registered", async () => {
    const models = (apps: { agent: unknown }[]) => {
      const root = apps[0]?.agent as LlmAgent;
      const steps = (root.options.tools as AgentTool[])[0]?.agent.subAgents as LlmAgent[];
      return [root, ...steps].map((agent) => agent.options.model);
    };
    const declared = await loadAppsFromYaml('examples/kagent');
    expect(models(declared.apps)).toEqual(Array(4).fill('gemini-2.5-flash'));
    const registered = { 'default-model-config': new ScriptedModel({ respond: () => 'x' }) };
    const inCode = await loadAppsFromYaml('examples/kagent', { models: registered });
    expect(models(inCode.apps)).toEqual(Array(4).fill('default-model-config'));
  });

  it('is what --apps / createEngine({ apps: path }) use for a .yaml file or a folder', async () => {
    const file = await loadAppsModule('examples/writer.yaml');
    expect(file.apps.map((a) => a.name)).toEqual(['writer']);
    const models = { 'default-model-config': new ScriptedModel({ respond: () => 'x' }) };
    const dir = await loadAppsModule('examples/kagent', { models, tools: {} });
    expect(dir.apps.map((a) => a.name)).toEqual(['code-development-pipeline']);
    expect(dir.models).toBe(models);
    const invalid = yamlFile('app: x\nagents: [{ name: a, modle: m }]\n');
    await expect(loadAppsModule(invalid)).rejects.toMatchObject({
      code: 'VALIDATION',
      message: expect.stringContaining(`${invalid}:2:21: agents[0].modle: unknown key "modle" in LlmAgent`),
    });
  });
});
