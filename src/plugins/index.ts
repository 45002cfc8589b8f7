export * from './base-plugin.js';
export * from './plugin-manager.js';
export * from './logging-plugin.js';
export * from './global-instruction-plugin.js';
export * from './reflect-retry-tool-plugin.js';
