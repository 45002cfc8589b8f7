export * from './agent-tool.js';
export * from './exit-loop.js';
export * from './function-tool.js';
export * from './tool.js';
