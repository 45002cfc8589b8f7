/** agentloom: a durable workflow engine for ADK-style agents. */
export * from './core/index.js';
export * from './agents/index.js';
export * from './tools/index.js';
export * from './models/index.js';
export * from './engine/index.js';
export * from './plugins/index.js';
export { Store } from './store/store.js';
export type { ModelRateLimit, RateLimit } from './queue/model-rate-limiter.js';
export { migrate, openDatabase } from './store/index.js';
export { loadEnv } from './config/env.js';
export {
  checkAppsYaml,
  formatProblem,
  loadAppsFromYaml,
  type ConfigProblem,
  type DeclarativeApp,
  type Registries,
  type YamlAppsCheck,
} from './config/apps/load-apps.js';
