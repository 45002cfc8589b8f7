/**
 * The zod schema of a kagent `Agent` manifest (kagent.dev/v1alpha2, reference 001): `spec.declarative` with
 * `systemMessage`, `modelConfig`, `tools` and `subagents`, and the proposal's validation rules — a subagent has
 * exactly one of `agent` / `workflow`; `type` is Sequential, Parallel or Loop; a Loop needs `loopConfig`;
 * `maxIterations` is 1–100, default 5. Messages say what to write instead.
 */
import * as z from 'zod';
import { suggest } from '../shared/yaml-source.js';

/** The apiVersion of the manifests agentloom reads. */
export const KAGENT_API_VERSION = 'kagent.dev/v1alpha2';

/** Annotation marking the root Agent of a folder of manifests (value "true"). */
export const ROOT_ANNOTATION = 'agentloom.dev/root';

/** Annotation on the root Agent naming the app (default: the root's `metadata.name`). */
export const APP_ANNOTATION = 'agentloom.dev/app';

/**
 * Other kagent kinds a folder may hold. ModelConfigs declare the models Agents name (kagent-model-configs.ts),
 * RemoteMCPServers and MCPServers the MCP servers their tools come from (kagent-mcp-servers.ts); the others are
 * skipped.
 */
export const SKIPPED_KINDS: readonly string[] = [
  'ModelConfig',
  'RemoteMCPServer',
  'MCPServer',
  'ToolServer',
  'Memory',
];

const WORKFLOW_TYPES = ['Sequential', 'Parallel', 'Loop'] as const;

const KUBERNETES_NAME = /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/;

const kubernetesName = (example: string) =>
  z
    .string({
      error: (issue) =>
        issue.input === undefined
          ? `missing; write name: ${example}`
          : `write the name as text, e.g. name: ${example}`,
    })
    .regex(KUBERNETES_NAME, `write a Kubernetes name (lowercase letters, digits, - and .), e.g. ${example}`);

const text = (key: string, example: string) =>
  z.string({ error: `write ${key} as text, e.g. ${key}: "${example}"` }).optional();

/** A `headersFrom` list: each entry is checked by kagent-value-refs.ts (where its problems get their exact line). */
const headersFromList = z
  .array(z.unknown(), {
    error: 'write headersFrom as a list of { name, valueFrom: { type: Secret, name, key } }',
  })
  .optional();

/**
 * A reference to another Agent of the folder (`name`, or `namespace/name` in a workflow), or with `url` to an agent
 * served elsewhere over A2A (reference 001's SubagentConfig: `{name, url, headers?, timeout?}`), which becomes a
 * RemoteA2aAgent.
 */
const agentReference = z.strictObject({
  name: z
    .string({
      error: (i) =>
        i.input === undefined ? 'missing; write name: <an Agent of this folder>' : 'write the name as text',
    })
    .min(1, 'write name: <an Agent of this folder>'),
  kind: z.literal('Agent', { error: 'write kind: Agent (only Agents can be referenced)' }).optional(),
  apiGroup: z.literal('kagent.dev', { error: 'write apiGroup: kagent.dev' }).optional(),
  namespace: text('namespace', 'kagent'),
  description: text('description', 'Reviews code for errors'),
  url: z
    .url({
      protocol: /^https?$/,
      error: "write url as the remote agent's http(s) base URL, e.g. url: http://code-reviewer.kagent:8080",
    })
    .optional(),
  headers: z
    .record(z.string(), z.string({ error: 'write each value of headers as text' }), {
      error: 'write headers as a mapping of names to text, e.g. headers: { authorization: Bearer … }',
    })
    .optional(),
  timeout: z
    .number({ error: 'write timeout as a number of seconds, e.g. timeout: 300' })
    .positive('timeout must be a positive number of seconds, e.g. timeout: 300')
    .optional(),
  /** Headers from Secrets (kagent's ValueRef list), read by kagent-value-refs.ts. */
  headersFrom: headersFromList,
});

/** An agent reference as parsed. */
export type KagentAgentReference = z.infer<typeof agentReference>;

const workflowSchema = z
  .strictObject({
    type: z.enum(WORKFLOW_TYPES, {
      error: (issue) =>
        issue.input === undefined
          ? 'missing; write type: Sequential, Parallel or Loop'
          : `workflow type must be Sequential, Parallel, or Loop; ${suggest(String(issue.input), WORKFLOW_TYPES, 'one of')}`,
    }),
    agents: z
      .array(agentReference, { error: 'write agents as a list, e.g. agents: [{ name: code-writer }]' })
      .min(1, 'a workflow needs at least one agent: add - name: <an Agent of this folder>'),
    loopConfig: z
      .strictObject(
        {
          maxIterations: z
            .number({ error: 'write maxIterations as a whole number from 1 to 100, e.g. maxIterations: 5' })
            .int('write maxIterations as a whole number from 1 to 100, e.g. maxIterations: 5')
            .min(1, 'maxIterations must be at least 1; write e.g. maxIterations: 5')
            .max(100, 'maxIterations must be at most 100; write e.g. maxIterations: 100')
            .default(5),
        },
        { error: 'write loopConfig as a mapping, e.g. loopConfig: { maxIterations: 5 }' },
      )
      .optional(),
  })
  .superRefine((workflow, ctx) => {
    if (workflow.type === 'Loop' && !workflow.loopConfig) {
      ctx.addIssue({
        code: 'custom',
        path: ['loopConfig'],
        message: 'Loop workflow must specify loopConfig; write loopConfig: { maxIterations: 5 }',
      });
    }
    if (workflow.type !== 'Loop' && workflow.loopConfig) {
      ctx.addIssue({
        code: 'custom',
        path: ['loopConfig'],
        message: `loopConfig applies to Loop workflows only; remove it or write type: Loop`,
      });
    }
  });

const subagentSchema = z
  .strictObject({
    agent: agentReference.optional(),
    workflow: workflowSchema.optional(),
    role: text('role', 'Development Pipeline'),
    description: text('description', 'Sequential code development process'),
    /** Headers for the subagent's remote agents (reference 001's Subagent.headersFrom). */
    headersFrom: headersFromList,
  })
  .superRefine((subagent, ctx) => {
    if (subagent.agent && subagent.workflow) {
      ctx.addIssue({
        code: 'custom',
        message: 'subagent must specify either agent or workflow, not both; move one into its own list entry',
      });
    } else if (!subagent.agent && !subagent.workflow) {
      ctx.addIssue({
        code: 'custom',
        message:
          'subagent must specify either agent or workflow; add agent: { name: … } or workflow: { type: …, agents: […] }',
      });
    }
  });

const toolSchema = z
  .strictObject({
    type: z.enum(['McpServer', 'Agent'], { error: 'write type: McpServer or type: Agent' }),
    mcpServer: z
      .strictObject({
        name: z.string({ error: 'write name: <MCP server name>' }),
        kind: z
          .enum(['RemoteMCPServer', 'MCPServer'], {
            error: 'write kind: RemoteMCPServer or kind: MCPServer',
          })
          .optional(),
        apiGroup: z.string().optional(),
        namespace: z.string().optional(),
        toolNames: z
          .array(z.string({ error: 'write a tool name as text' }), {
            error: "write toolNames as a list of the server's tool names, e.g. toolNames: [search]",
          })
          .min(1, 'list at least one tool name, e.g. toolNames: [search]'),
        requireApproval: z
          .array(z.string({ error: 'write a tool name as text' }), {
            error:
              'write requireApproval as a list of tool names of toolNames, e.g. requireApproval: [publish]',
          })
          .optional(),
      })
      .optional(),
    agent: agentReference.optional(),
    /** Headers sent to the tool's server (kagent's Tool.headersFrom), overriding the server's own. */
    headersFrom: headersFromList,
  })
  .superRefine((tool, ctx) => {
    tool.mcpServer?.requireApproval?.forEach((name, i) => {
      if (!tool.mcpServer?.toolNames.includes(name)) {
        ctx.addIssue({
          code: 'custom',
          path: ['mcpServer', 'requireApproval', i],
          message: `"${name}" is not in toolNames (${tool.mcpServer?.toolNames.join(', ')}): requireApproval lists tools of toolNames`,
        });
      }
    });
    if (tool.type === 'McpServer' && !tool.mcpServer) {
      ctx.addIssue({
        code: 'custom',
        path: ['mcpServer'],
        message: 'missing; write mcpServer: { name: …, toolNames: [...] }',
      });
    }
    if (tool.type === 'Agent' && !tool.agent) {
      ctx.addIssue({
        code: 'custom',
        path: ['agent'],
        message: 'missing; write agent: { name: <an Agent of this folder> }',
      });
    }
  });

const declarativeSchema = z.strictObject(
  {
    systemMessage: z.string({
      error: (i) =>
        i.input === undefined
          ? 'missing; write systemMessage: "<the instructions of this agent>"'
          : 'write systemMessage as text',
    }),
    modelConfig: z
      .string({
        error:
          'write modelConfig as the name of a registered model, a Gemini id or a ModelConfig of this folder, e.g. gemini-2.5-flash',
      })
      .optional(),
    stream: z.boolean({ error: 'write stream: true or stream: false' }).optional(),
    tools: z.array(toolSchema, { error: 'write tools as a list' }).optional(),
    subagents: z.array(subagentSchema, { error: 'write subagents as a list' }).optional(),
  },
  {
    error: (i) =>
      i.input === undefined
        ? 'missing; write declarative: { systemMessage: …, modelConfig: … }'
        : 'write declarative as a mapping',
  },
);

/** One kagent Agent manifest. */
export const kagentAgentSchema = z.strictObject({
  apiVersion: z.literal(KAGENT_API_VERSION, {
    error: `agentloom reads ${KAGENT_API_VERSION} manifests; write apiVersion: ${KAGENT_API_VERSION}`,
  }),
  kind: z.literal('Agent'),
  metadata: z.looseObject(
    {
      name: kubernetesName('code-writer'),
      namespace: text('namespace', 'kagent'),
      annotations: z
        .record(z.string(), z.string({ error: 'write annotation values as text, e.g. "true"' }))
        .optional(),
    },
    { error: 'missing; write metadata: { name: <agent name> }' },
  ),
  spec: z.strictObject(
    {
      type: z
        .literal('Declarative', { error: 'agentloom loads Declarative agents only; write type: Declarative' })
        .optional(),
      description: text('description', 'Generates initial code'),
      declarative: declarativeSchema,
    },
    { error: 'missing; write spec: { declarative: { systemMessage: … } }' },
  ),
  // Written by the cluster, not by authors: accepted and ignored.
  status: z.unknown().optional(),
});

/** A parsed kagent Agent manifest. */
export type KagentAgent = z.infer<typeof kagentAgentSchema>;
/** One entry of `spec.declarative.subagents`. */
export type KagentSubagent = NonNullable<KagentAgent['spec']['declarative']['subagents']>[number];
