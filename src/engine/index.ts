export * from './apps-module.js';
export * from './create-engine.js';
export * from './engine.js';
export * from './registry.js';
export * from './runner.js';
export type { InvocationView, NodeView, PendingCall } from './views.js';
export type { FunctionResponseInput } from './resume.js';
export type { StartAt } from './start-agent.js';
export type { EngineObserver, ModelCallEnd, StepEnd, StepRun, ToolCallEnd } from './observer.js';
