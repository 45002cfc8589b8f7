/* global module */
/**
 * The import rules of src/ (ARCHITECTURE.md "Layers"), checked by `npm run lint` (dependency-cruiser):
 * no import circle, every import points down a floor, and each driver is imported by its adapter folder only.
 *
 * Floors, top to bottom: cli/ → api/, workers/ → engine/ → config/ → agents/ → tools/ → models/ → core/, with
 * store/ and queue/ (adapters over core/) below engine/. config/ sits above agents/ and tools/ because it builds
 * agent trees from YAML; AgentTool lives in agents/ (it wraps an agent), so tools/ never imports agents/.
 * Type-only imports count (tsPreCompilationDeps).
 */

/** Folders each folder may import, besides itself. */
const MAY_IMPORT = {
  core: [],
  models: ['core'],
  store: ['core'],
  queue: ['core'],
  tools: ['core', 'models'],
  agents: ['core', 'models', 'tools'],
  config: ['core', 'models', 'tools', 'agents'],
  engine: ['core', 'models', 'tools', 'agents', 'config', 'store', 'queue'],
  api: ['core', 'models', 'tools', 'agents', 'config', 'store', 'queue', 'engine'],
  workers: ['core', 'models', 'tools', 'agents', 'config', 'store', 'queue', 'engine'],
  cli: ['core', 'models', 'tools', 'agents', 'config', 'store', 'queue', 'engine', 'api', 'workers'],
};

const layerRules = Object.entries(MAY_IMPORT).map(([folder, allowed]) => ({
  name: `layer-${folder}`,
  comment: `src/${folder}/ may import only ${allowed.length ? allowed.map((f) => `src/${f}/`).join(', ') : 'itself'} (a lower floor)`,
  severity: 'error',
  from: { path: `^src/${folder}/` },
  to: { path: '^src/[^/]+/', pathNot: [`^src/(${[folder, ...allowed].join('|')})/`] },
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
    ...layerRules,
    driverRule('driver-store', ['drizzle-orm', 'pg', 'pg-protocol', '@electric-sql/pglite'], 'store'),
    driverRule('driver-queue', ['bullmq', 'ioredis'], 'queue'),
    driverRule('driver-models', ['@google/genai'], 'models'),
    driverRule('driver-api', ['fastify', '@fastify/[^/]+', 'fastify-type-provider-zod'], 'api'),
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsConfig: { fileName: 'tsconfig.json' },
    tsPreCompilationDeps: true,
  },
};
