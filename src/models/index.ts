/** The models folder's public face: the Model port and its adapters. */
export * from './model.js';
export * from './scripted-model.js';
export * from './providers/gemini.js';
export * from './providers/openai.js';
export * from './providers/anthropic.js';
export * from './model-ids.js';
export * from './providers/model-factory.js';
export * from './generation-defaults.js';
export * from './budget/pricing.js';
export * from './budget/budget.js';
