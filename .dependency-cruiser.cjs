/* global module */
/**
 * The import rules of src/ (ARCHITECTURE.md "Layers", README.md "Source layout"), checked by `npm run lint`
 * (dependency-cruiser): no import circle (bench/ included), every import points down a floor, inside a floor every
 * import points down a room, and each driver is imported by its adapter folder only. Type-only imports count
 * (tsPreCompilationDeps).
 *
 * Floors, top to bottom: cli/ → api/, workers/ → engine/ → agents/ → plugins/ → tools/ → models/ → store/,
 * queue/ → config/ → core/. plugins/ (ADK's BasePlugin, the callback pipeline) sits under agents/: the agent loop
 * runs its pipeline, and a plugin sees tools, models and events, never an agent's internals. tools/ and models/ share a floor in the architecture; tools/ imports models/ (a tool's
 * declaration is a model type), never the other way. store/ and queue/ do not import each other, and only
 * engine/ and above import them: agents and tools never touch a driver, they see an InvocationContext.
 *
 * Deliberate exception: config/apps/ (the YAML and kagent apps → agent tree builders, CONFIG_APPS) builds agents
 * and tools, so it imports agents/, tools/ and models/ and sits above agents/: only engine/ and the floors above
 * import it. The rest of config/ (flags and environment: env.ts, process-config.ts, worker-config.ts, …) stays on
 * its floor above core/. AgentTool lives in agents/ (it wraps an agent), so tools/ never imports agents/.
 *
 * Rooms (ROOMS): a floor's sub-folders by role, each with a README.md saying what it owns. Inside a floor, a room
 * imports only the rooms listed for it; imports from other floors are the layer rules' business.
 */

/** config/'s YAML and kagent apps → agent tree (the exception above). */
const CONFIG_APPS = '^src/config/apps/';

/** Each unit of the graph: the files it holds. */
const UNITS = {
  core: '^src/core/',
  config: '^src/config/(?!apps/)',
  store: '^src/store/',
  queue: '^src/queue/',
  models: '^src/models/',
  tools: '^src/tools/',
  plugins: '^src/plugins/',
  agents: '^src/agents/',
  'config-apps': CONFIG_APPS,
  engine: '^src/engine/',
  api: '^src/api/',
  workers: '^src/workers/',
  cli: '^src/cli/',
  /** src/index.ts, the package's public face: everything of ours, so only cli/ (which runs the demo) imports it. */
  package: '^src/index\\.ts$',
};

const BELOW_ENGINE = [
  'core',
  'config',
  'store',
  'queue',
  'models',
  'tools',
  'plugins',
  'agents',
  'config-apps',
];

/** Units each unit may import, besides itself. */
const MAY_IMPORT = {
  core: [],
  config: ['core'],
  store: ['core', 'config'],
  queue: ['core', 'config'],
  models: ['core', 'config'],
  tools: ['core', 'config', 'models'],
  plugins: ['core', 'config', 'models', 'tools'],
  agents: ['core', 'config', 'models', 'tools', 'plugins'],
  'config-apps': ['core', 'config', 'models', 'tools', 'plugins', 'agents'],
  engine: BELOW_ENGINE,
  api: [...BELOW_ENGINE, 'engine'],
  workers: [...BELOW_ENGINE, 'engine'],
  cli: [...BELOW_ENGINE, 'engine', 'api', 'workers', 'package'],
  package: [...BELOW_ENGINE, 'engine'],
};

const layerRules = Object.entries(MAY_IMPORT).map(([unit, allowed]) => ({
  name: `layer-${unit}`,
  comment: `${unit} may import only ${allowed.length ? allowed.join(', ') : 'itself'} (a lower floor)`,
  severity: 'error',
  from: { path: UNITS[unit] },
  to: { path: '^src/', pathNot: [unit, ...allowed].map((u) => UNITS[u]) },
}));

/** The files directly in a folder (its face, or its base where the rooms build on it). */
const top = (folder, ...except) =>
  `^src/${folder}/${except.map((name) => `(?!${name.replace(/\./g, '\\.')}$)`).join('')}[^/]+$`;

/**
 * Rooms inside a floor, top to bottom: each room's files, and the rooms it may import besides itself (a room
 * never imports one above it, so no room imports its floor's face). README.md of each folder says what it owns.
 */
const ROOMS = {
  engine: {
    /** engine.ts, create-engine.ts, engine-options.ts, runner.ts, …: the engine's face and its wiring. */
    face: { path: top('engine'), may: ['runs', 'step', 'stepEnv', 'auth', 'apps', 'observe'] },
    /** What callers do to runs: enqueue, resume, cancel, answer, follow, read. */
    runs: { path: '^src/engine/runs/', may: ['step', 'stepEnv', 'auth', 'apps', 'observe'] },
    /** How a step job executes: the dispatcher and the claim (engine/step/README.md). */
    step: {
      path: top('engine/step'),
      may: ['stepLeaf', 'stepWorkflow', 'stepEnv', 'stepRuntime', 'auth', 'apps', 'observe'],
    },
    /** A leaf's step: run it, commit what it did. */
    stepLeaf: {
      path: '^src/engine/step/leaf/',
      may: ['stepWorkflow', 'stepEnv', 'stepRuntime', 'auth', 'apps', 'observe'],
    },
    /** A workflow node's step: advance, join, a branch's end. */
    stepWorkflow: {
      path: '^src/engine/step/workflow/',
      may: ['stepEnv', 'stepRuntime', 'auth', 'apps', 'observe'],
    },
    /** What a scheduler shares with its steps. */
    stepEnv: { path: '^src/engine/step/env/', may: ['stepRuntime', 'auth', 'apps', 'observe'] },
    /** The context a leaf runs in: lease, live refs, budget gate, rate-limit slots, replay. */
    stepRuntime: { path: '^src/engine/step/runtime/', may: ['auth', 'apps', 'observe'] },
    /** The auth gate (OAuth2, the credential vault) and elicitation: what a paused step waits for. */
    auth: { path: '^src/engine/auth/', may: ['apps', 'observe'] },
    /** The apps an engine serves (registry, loading them from a path). */
    apps: { path: '^src/engine/apps/', may: [] },
    /** The observer callbacks (metrics, tracing). */
    observe: { path: '^src/engine/observe/', may: [] },
  },
  api: {
    /** server.ts, run-api.ts, api-config.ts, index.ts: the HTTP server and its wiring. */
    face: { path: top('api'), may: ['routes', 'adk', 'a2a', 'http'] },
    /** agentloom's own routes (/v1/…). */
    routes: { path: '^src/api/routes/', may: ['http'] },
    /** The ADK-compatible routes and the ADK dev UI. */
    adk: { path: '^src/api/adk/', may: ['http'] },
    /** Every app an A2A server: JSON-RPC (v1.0 and v0.3) and agent cards, tasks read from the engine's tables. */
    a2a: { path: '^src/api/a2a/', may: ['http'] },
    /** What every route room shares: context, auth and access, errors, schemas, SSE, metrics. */
    http: { path: '^src/api/http/', may: [] },
  },
  store: {
    /** store.ts (the Store port's implementation), notify-bus.ts, index.ts. */
    face: { path: top('store'), may: ['step', 'repos', 'db'] },
    /** The hot step statements: claim, advance, complete, end, in one statement each. */
    step: { path: '^src/store/step/', may: ['repos', 'db'] },
    /** One repository per table (and the row mappings the step statements share). */
    repos: { path: '^src/store/repos/', may: ['db'] },
    /** The database: connections, LISTEN, schema, migrations, transactions. */
    db: { path: '^src/store/db/', may: [] },
  },
  agents: {
    /** index.ts, the floor's public face. */
    face: { path: '^src/agents/index\\.ts$', may: ['base', 'llm', 'workflow', 'remote'] },
    /** LlmAgent: the model ↔ tool loop. */
    llm: { path: '^src/agents/llm/', may: ['base'] },
    /** WorkflowAgent and its Sequential/Parallel/Loop state machines. */
    workflow: { path: '^src/agents/workflow/', may: ['base'] },
    /** RemoteA2aAgent: an agent of another A2A server as a durable leaf (the A2A client). */
    remote: { path: '^src/agents/remote/', may: ['base'] },
    /** BaseAgent, its InvocationContext, branches, AgentTool: what every kind of agent builds on. */
    base: { path: top('agents', 'index.ts'), may: [] },
  },
  cli: {
    /** main.ts (the commands) and validate.ts. */
    face: { path: top('cli'), may: ['dev', 'client', 'terminal'] },
    /** `agentloom dev` and `demo`: the embedded engine, the walkthrough. */
    dev: { path: '^src/cli/dev/', may: ['client', 'terminal'] },
    /** Commands talking to a running API: run, follow, status, pending, auth. */
    client: { path: '^src/cli/client/', may: ['terminal'] },
    /** What the CLI writes to a terminal: errors and exit codes, event lines, progress, the log. */
    terminal: { path: '^src/cli/terminal/', may: [] },
  },
  'config-apps': {
    /** load-apps.ts: a YAML path → apps, dispatching each document to its dialect. */
    face: { path: top('config/apps'), may: ['kagent', 'native', 'shared'] },
    /** kagent Agent, ModelConfig and MCP server manifests (reuses native's agent schemas). */
    kagent: { path: '^src/config/apps/kagent/', may: ['native', 'shared'] },
    /** agentloom's own YAML format. */
    native: { path: '^src/config/apps/native/', may: ['shared'] },
    /** What both dialects share: YAML locations, JSON Schema → zod, the names a file may use. */
    shared: { path: '^src/config/apps/shared/', may: [] },
  },
  models: {
    /** index.ts, the floor's public face. */
    face: { path: '^src/models/index\\.ts$', may: ['base', 'providers', 'budget'] },
    /** The providers' adapters (Gemini, OpenAI, Anthropic), their wire conversions, retries, the id → model factory. */
    providers: { path: '^src/models/providers/', may: ['base'] },
    /** Token and cost budgets: the price table and the arithmetic of a budget check. */
    budget: { path: '^src/models/budget/', may: ['base'] },
    /** The Model port, model ids, generation defaults, ScriptedModel: what every room builds on. */
    base: { path: top('models', 'index.ts'), may: [] },
  },
  tools: {
    /** index.ts, the floor's public face. */
    face: { path: '^src/tools/index\\.ts$', may: ['base', 'mcp'] },
    /** MCP toolsets. */
    mcp: { path: '^src/tools/mcp/', may: ['base'] },
    /** Tool, Toolset, FunctionTool, tool auth. */
    base: { path: top('tools', 'index.ts'), may: [] },
  },
};

const roomRules = Object.entries(ROOMS).flatMap(([floor, rooms]) =>
  Object.entries(rooms).map(([room, { path, may }]) => ({
    name: `room-${floor}-${room}`,
    comment: `in ${floor}, ${room} may import only ${may.length ? may.join(', ') : 'itself'} (a lower room)`,
    severity: 'error',
    from: { path },
    to: { path: UNITS[floor], pathNot: [path, ...may.map((r) => rooms[r].path)] },
  })),
);

/** A driver is imported by its adapter folder only. */
const driverRule = (name, modules, folder) => ({
  name,
  comment: `only src/${folder}/ imports ${modules.join(', ')}`,
  severity: 'error',
  from: { path: '^src/', pathNot: `^src/${folder}/` },
  to: { path: `node_modules/(${modules.join('|')})/` },
});

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      comment: 'an import circle: move the shared types down to where both sides can import them',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
    {
      name: 'no-unresolvable',
      comment: 'an import that resolves to no file: the graph would miss it',
      severity: 'error',
      from: { pathNot: '^bench/' },
      to: { couldNotResolve: true },
    },
    {
      name: 'no-unresolvable-bench',
      comment:
        "a relative import of bench/ that resolves to no file (bench's peer packages are installed by `npm run bench` only)",
      severity: 'error',
      from: { path: '^bench/' },
      to: { couldNotResolve: true, path: '^[.]' },
    },
    ...layerRules,
    ...roomRules,
    driverRule('driver-store', ['drizzle-orm', 'pg', 'pg-protocol', '@electric-sql/pglite'], 'store'),
    driverRule('driver-queue', ['bullmq', 'ioredis'], 'queue'),
    driverRule('driver-models', ['@google/genai', 'openai', '@anthropic-ai/sdk'], 'models'),
    driverRule('driver-api', ['fastify', '@fastify/[^/]+', 'fastify-type-provider-zod'], 'api'),
    // The A2A client (v1.0 and its v0.3 compat): RemoteA2aAgent's room only (api/a2a/ is the server side).
    driverRule(
      'driver-a2a-client',
      ['@a2a-js/sdk/dist/client', '@a2a-js/sdk/dist/compat/v0_3/client'],
      'agents/remote',
    ),
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsConfig: { fileName: 'tsconfig.json' },
    tsPreCompilationDeps: true,
    // Resolve packages through their `exports` as Node does (tsx/esm/api has no file at that path).
    enhancedResolveOptions: {
      exportsFields: ['exports'],
      conditionNames: ['import', 'require', 'node', 'default', 'types'],
    },
  },
};
