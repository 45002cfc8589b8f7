export * from './exit-loop.js';
export * from './function-tool.js';
export * from './tool.js';
