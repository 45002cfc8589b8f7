export * from './database.js';
export * from './events.js';
export * from './migrate.js';
export * from './sessions.js';
export * from './state.js';
export * from './store.js';
export * from './tx.js';
export * as schema from './schema.js';
