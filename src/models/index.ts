/** The models folder's public face: the Model port and its adapters. */
export * from './model.js';
export * from './scripted-model.js';
export * from './gemini.js';
export * from './openai.js';
export * from './anthropic.js';
export * from './model-ids.js';
export * from './model-factory.js';
export * from './generation-defaults.js';
export * from './pricing.js';
export * from './budget.js';
