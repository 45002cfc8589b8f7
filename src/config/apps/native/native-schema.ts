/**
 * The zod schemas of agentloom's own YAML format (CONTRACT.md "Declarative agents"): one app per document,
 * `app`, `root`, and `agents`, each agent a mapping whose `type` picks its schema. Every message says what to
 * write instead. Sub-agents and tool entries are checked one by one by the loader (native-apps.ts), so an
 * inline definition is validated with its own type's schema and its problems carry their exact path.
 */
import * as z from 'zod';
import { validateBudget } from '../../../models/budget/budget.js';

/** Agent types of the native format, the classes they become. */
export const AGENT_TYPES = [
  'LlmAgent',
  'SequentialAgent',
  'ParallelAgent',
  'LoopAgent',
  'RemoteA2aAgent',
] as const;

/** One of {@link AGENT_TYPES}. */
export type AgentType = (typeof AGENT_TYPES)[number];

const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * The agentloom agent name for a name that may not be a JS identifier (kagent's `code-writer`): every character
 * other than a letter, digit or `_` becomes `_`, and a leading digit gets a `_` in front. Deterministic, so the
 * same manifest always yields the same agent name (and definition hash).
 */
export function toIdentifier(name: string): string {
  const replaced = name.replace(/[^A-Za-z0-9_]/g, '_');
  return /^[0-9]/.test(replaced) ? `_${replaced}` : replaced;
}

/** Whether `name` can name an agent: a JS identifier other than `user`. */
export function agentNameProblem(name: string): string | undefined {
  if (!IDENTIFIER.test(name)) {
    return `"${name}" is not a valid agent name; use a JS identifier (letters, digits, _), e.g. "${toIdentifier(name) || 'my_agent'}"`;
  }
  if (name === 'user') return '"user" is reserved for the end user; choose another agent name';
  return undefined;
}

const missingOr =
  (missing: string, wrong: string) =>
  (issue: { input: unknown }): string =>
    issue.input === undefined ? `missing; ${missing}` : wrong;

/** An agent name (a JS identifier, not `user`). */
export const agentNameSchema = z
  .string({
    error: missingOr(
      'write name: <identifier>, e.g. name: research_agent',
      'write a name such as research_agent',
    ),
  })
  .superRefine((name, ctx) => {
    const problem = agentNameProblem(name);
    if (problem) ctx.addIssue({ code: 'custom', message: problem });
  });

const text = (key: string, example: string) =>
  z.string({ error: `write ${key} as text, e.g. ${key}: "${example}"` }).optional();
const flag = (key: string) => z.boolean({ error: `write ${key}: true or ${key}: false` }).optional();
const milliseconds = (key: string, example: number) =>
  z
    .number({ error: `write ${key} as a number of milliseconds, e.g. ${key}: ${example}` })
    .positive(`${key} must be a positive number of milliseconds, e.g. ${key}: ${example}`)
    .optional();
const list = (key: string, example: string) =>
  z.array(z.unknown(), { error: `write ${key} as a list, e.g. ${key}: ${example}` });
const mapping = (key: string, example: string) =>
  z
    .record(z.string(), z.unknown(), { error: `write ${key} as a mapping, e.g. ${key}: ${example}` })
    .optional();

/** A budget (README "Budgets"), checked by the engine's own rule so YAML and code say the same thing. */
const budgetSchema = z
  .unknown()
  .optional()
  .superRefine((value, ctx) => {
    if (value === undefined) return;
    try {
      validateBudget(value, 'budget');
    } catch (err) {
      ctx.addIssue({ code: 'custom', message: (err as Error).message });
    }
  });

const typeField = z.string().optional();
const subAgentsExample = '[research, { name: critic, type: LlmAgent, … }]';

/** Keys every agent type accepts. */
const common = {
  name: agentNameSchema,
  type: typeField,
  description: text('description', 'Finds sources on the web'),
  maxStepMs: milliseconds('maxStepMs', 600000),
  budget: budgetSchema,
};

const workflowSubAgents = (type: string) =>
  list('subAgents', subAgentsExample).min(
    1,
    `a ${type} needs at least one sub-agent: list agent names of this app or inline definitions`,
  );

/** An LlmAgent: every option of SEMANTICS §3 that is data (callbacks and instruction functions stay in code). */
export const llmAgentSchema = z.strictObject({
  ...common,
  model: z
    .string({
      error:
        'write model as a registered model name or a provider id, e.g. model: gemini-2.5-flash or model: openai/gpt-4.1',
    })
    .min(
      1,
      'write model as a registered model name or a provider id, e.g. model: gemini-2.5-flash or model: openai/gpt-4.1',
    )
    .optional(),
  instruction: text('instruction', 'Summarise {topic}'),
  globalInstruction: text('globalInstruction', 'Answer in English'),
  staticInstruction: text('staticInstruction', 'You are a careful writer'),
  tools: list('tools', '[exit_loop, { agent: researcher }]').optional(),
  subAgents: list('subAgents', subAgentsExample).optional(),
  outputKey: z
    .string({ error: 'write outputKey as a state key, e.g. outputKey: draft' })
    .min(1, 'write outputKey as a state key, e.g. outputKey: draft')
    .optional(),
  outputSchema: mapping('outputSchema', '{ type: object, properties: { title: { type: string } } }'),
  includeContents: z
    .enum(['default', 'none'], { error: 'write includeContents: default or includeContents: none' })
    .optional(),
  maxIterations: z
    .number({ error: 'write maxIterations as a whole number ≥ 1 (model↔tool rounds, default 16)' })
    .int('write maxIterations as a whole number ≥ 1 (model↔tool rounds, default 16)')
    .min(1, 'write maxIterations as a whole number ≥ 1 (model↔tool rounds, default 16)')
    .optional(),
  generateContentConfig: mapping('generateContentConfig', '{ temperature: 0.2 }'),
  stream: flag('stream'),
  modelTimeoutMs: milliseconds('modelTimeoutMs', 120000),
  disallowTransferToParent: flag('disallowTransferToParent'),
  disallowTransferToPeers: flag('disallowTransferToPeers'),
  disableTransfer: flag('disableTransfer'),
});

/** A SequentialAgent. */
export const sequentialAgentSchema = z.strictObject({
  ...common,
  subAgents: workflowSubAgents('SequentialAgent'),
});

/** A ParallelAgent. */
export const parallelAgentSchema = z.strictObject({
  ...common,
  subAgents: workflowSubAgents('ParallelAgent'),
});

/** A LoopAgent: `maxIterations` 1–100, default 5 (SEMANTICS §2, declarative configs). */
export const loopAgentSchema = z.strictObject({
  ...common,
  subAgents: workflowSubAgents('LoopAgent'),
  maxIterations: z
    .number({
      error: 'write maxIterations as a whole number from 1 to 100, e.g. maxIterations: 5 (default 5)',
    })
    .int('write maxIterations as a whole number from 1 to 100, e.g. maxIterations: 5 (default 5)')
    .min(1, 'maxIterations must be at least 1; write e.g. maxIterations: 5')
    .max(100, 'maxIterations must be at most 100 in a declarative config; write e.g. maxIterations: 100')
    .default(5),
});

/** A mapping of names to text or `{ valueFrom: { env: NAME } }` (read and checked by native-secrets.ts). */
const textMap = (key: string) =>
  z
    .record(
      z.string(),
      z.union([z.string(), z.record(z.string(), z.unknown())], {
        error: `write each value of ${key} as text, or as { valueFrom: { env: NAME } } for a secret`,
      }),
      { error: `write ${key} as a mapping of names to text` },
    )
    .optional();

/** A RemoteA2aAgent: an agent of another A2A server, reached through its card. */
export const remoteA2aAgentSchema = z.strictObject({
  ...common,
  agentCard: z.url({
    protocol: /^https?$/,
    error: (issue) =>
      issue.input === undefined
        ? "missing; write agentCard: <the agent's URL or its card's>, e.g. agentCard: http://localhost:8080/a2a/writer"
        : "write agentCard as the agent's http(s) URL or its card's, e.g. agentCard: http://localhost:8080/a2a/writer",
  }),
  headers: textMap('headers'),
  timeoutMs: milliseconds('timeoutMs', 300000),
  outputKey: z
    .string({ error: 'write outputKey as a state key, e.g. outputKey: review' })
    .min(1, 'write outputKey as a state key, e.g. outputKey: review')
    .optional(),
  sideEffects: z
    .enum(['idempotent', 'unsafe'], {
      error: 'write sideEffects: idempotent (send again after a crash, the default) or unsafe (ask a human)',
    })
    .optional(),
});

/** The schema of each agent type. */
export const AGENT_SCHEMAS = {
  LlmAgent: llmAgentSchema,
  SequentialAgent: sequentialAgentSchema,
  ParallelAgent: parallelAgentSchema,
  LoopAgent: loopAgentSchema,
  RemoteA2aAgent: remoteA2aAgentSchema,
} as const;

/** A parsed LlmAgent definition. */
export type LlmAgentData = z.infer<typeof llmAgentSchema>;
/** A parsed workflow agent definition (LoopAgent's has `maxIterations`). */
export type WorkflowAgentData = z.infer<typeof sequentialAgentSchema> & { maxIterations?: number };
/** A parsed RemoteA2aAgent definition. */
export type RemoteAgentData = z.infer<typeof remoteA2aAgentSchema>;

/** A tool entry that offers an agent as a tool (an AgentTool). */
export const agentToolSchema = z.strictObject({
  agent: z.unknown().refine((v) => v !== undefined && v !== null, {
    message: 'missing; write agent: <name of an agent of this app> or an inline definition',
  }),
  skipSummarization: flag('skipSummarization'),
});

const names = (key: string) =>
  z
    .array(z.string({ error: `write ${key} as a list of tool names, e.g. ${key}: [search]` }), {
      error: `write ${key} as a list of tool names, e.g. ${key}: [search]`,
    })
    .optional();
/**
 * A tool entry that offers an MCP server's tools (an McpToolset): `mcp: { url | command, … }`. A stdio server's
 * command runs in the YAML file's folder unless `cwd` says otherwise.
 */
export const mcpToolSchema = z.strictObject({
  mcp: z
    .strictObject({
      url: z
        .url({ error: 'write url as the server address, e.g. url: http://127.0.0.1:3001/mcp' })
        .optional(),
      transport: z
        .enum(['streamable-http', 'sse'], { error: 'write transport: streamable-http or transport: sse' })
        .optional(),
      headers: textMap('headers'),
      command: z.string({ error: 'write command as text, e.g. command: npx' }).min(1).optional(),
      args: z
        .array(z.string({ error: 'write each of args as text' }), {
          error: 'write args as a list, e.g. args: [server.js]',
        })
        .optional(),
      env: textMap('env'),
      cwd: z.string({ error: 'write cwd as a folder' }).optional(),
      name: z.string({ error: 'write name as text, e.g. name: github' }).min(1).optional(),
      prefix: z
        .string({ error: 'write prefix as text, e.g. prefix: github' })
        .regex(
          /^[A-Za-z_][A-Za-z0-9_]{0,31}$/,
          'write a prefix of letters, digits and _, e.g. prefix: github',
        )
        .optional(),
      toolFilter: names('toolFilter'),
      requireConfirmation: z
        .union([z.boolean(), z.array(z.string())], {
          error:
            'write requireConfirmation: true, or a list of tool names, e.g. requireConfirmation: [publish]',
        })
        .optional(),
      idempotent: names('idempotent'),
      timeoutMs: milliseconds('timeoutMs', 30000),
      auth: z.unknown().optional(),
    })
    .superRefine((mcp, ctx) => {
      if ((mcp.url === undefined) === (mcp.command === undefined)) {
        ctx.addIssue({
          code: 'custom',
          message:
            'write either url: (an HTTP server, e.g. url: http://127.0.0.1:3001/mcp) or command: (a stdio server, e.g. command: npx)',
        });
      }
      const http = ['transport', 'headers', 'auth'].filter((k) => mcp[k as keyof typeof mcp] !== undefined);
      const stdio = ['args', 'env', 'cwd'].filter((k) => mcp[k as keyof typeof mcp] !== undefined);
      if (mcp.command !== undefined && http.length > 0)
        ctx.addIssue({ code: 'custom', message: `${http.join(', ')} apply to url: servers; remove them` });
      if (mcp.url !== undefined && stdio.length > 0)
        ctx.addIssue({
          code: 'custom',
          message: `${stdio.join(', ')} apply to command: servers; remove them`,
        });
    }),
});

/** One document of the native format. */
export const appDocumentSchema = z.strictObject({
  app: z
    .string({
      error: missingOr('write app: <name>, e.g. app: writer', 'write the app name as text, e.g. app: writer'),
    })
    .regex(/^[A-Za-z0-9_.-]+$/, 'write an app name of letters, digits, _ . -, e.g. app: writer'),
  root: z.string({ error: 'write root: <name of the top agent>, e.g. root: writer_pipeline' }).optional(),
  budget: budgetSchema,
  agents: list('agents', '[{ name: writer, type: LlmAgent, … }]').min(
    1,
    'an app needs at least one agent: add an entry under agents:',
  ),
});

/** A tool entry naming a registered (or built-in) tool with options: `{ tool: list_events, auth: {…} }`. */
export const namedToolSchema = z.strictObject({
  tool: z
    .string({ error: 'write tool: <the name of a tool registered in code>, e.g. tool: list_events' })
    .min(1, 'write tool: <the name of a tool registered in code>, e.g. tool: list_events'),
  auth: z.unknown().optional(),
});
