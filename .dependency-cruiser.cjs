/* global module */
/**
 * The import rules of src/ (ARCHITECTURE.md "Layers"), checked by `npm run lint` (dependency-cruiser):
 * no import circle, every import points down a floor, and each driver is imported by its adapter folder only.
 * Type-only imports count (tsPreCompilationDeps).
 *
 * Floors, top to bottom: cli/ → api/, workers/ → engine/ → agents/ → tools/ → models/ → store/, queue/ →
 * config/ → core/. tools/ and models/ share a floor in the architecture; tools/ imports models/ (a tool's
 * declaration is a model type), never the other way. store/ and queue/ do not import each other, and only
 * engine/ and above import them: agents and tools never touch a driver, they see an InvocationContext.
 *
 * Deliberate exception: config/'s YAML → agent-tree builders (CONFIG_APPS) build agents and tools, so they
 * import agents/, tools/ and models/ and sit above agents/: only engine/ and the floors above import them.
 * The rest of config/ (flags and environment: env.ts, process-config.ts, worker-config.ts, …) stays on its
 * floor above core/. AgentTool lives in agents/ (it wraps an agent), so tools/ never imports agents/.
 */

/** config/'s YAML and kagent apps → agent tree (the exception above). */
const CONFIG_APPS = 'load-apps|registries|json-schema|yaml-source|native-[^/]+|kagent-[^/]+';

/** Each unit of the graph: the files it holds. */
const UNITS = {
  core: '^src/core/',
  config: `^src/config/(?!(?:${CONFIG_APPS})\\.ts$)`,
  store: '^src/store/',
  queue: '^src/queue/',
  models: '^src/models/',
  tools: '^src/tools/',
  agents: '^src/agents/',
  'config-apps': `^src/config/(?:${CONFIG_APPS})\\.ts$`,
  engine: '^src/engine/',
  api: '^src/api/',
  workers: '^src/workers/',
  cli: '^src/cli/',
  /** src/index.ts, the package's public face: everything of ours, so only cli/ (which runs the demo) imports it. */
  package: '^src/index\\.ts$',
};

const BELOW_ENGINE = ['core', 'config', 'store', 'queue', 'models', 'tools', 'agents', 'config-apps'];

/** Units each unit may import, besides itself. */
const MAY_IMPORT = {
  core: [],
  config: ['core'],
  store: ['core', 'config'],
  queue: ['core', 'config'],
  models: ['core', 'config'],
  tools: ['core', 'config', 'models'],
  agents: ['core', 'config', 'models', 'tools'],
  'config-apps': ['core', 'config', 'models', 'tools', 'agents'],
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
      from: {},
      to: { couldNotResolve: true },
    },
    ...layerRules,
    driverRule('driver-store', ['drizzle-orm', 'pg', 'pg-protocol', '@electric-sql/pglite'], 'store'),
    driverRule('driver-queue', ['bullmq', 'ioredis'], 'queue'),
    driverRule('driver-models', ['@google/genai', 'openai', '@anthropic-ai/sdk'], 'models'),
    driverRule('driver-api', ['fastify', '@fastify/[^/]+', 'fastify-type-provider-zod'], 'api'),
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
