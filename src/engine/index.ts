export * from './apps/apps-module.js';
export * from './create-engine.js';
export * from './engine.js';
export type { EngineOptions, EngineParts, QueueOption } from './engine-options.js';
export type { EnqueueInput } from './runs/enqueue.js';
export * from './apps/registry.js';
export * from './runner.js';
export type { InvocationView, NodeView, PendingCall } from './runs/views.js';
export type { FunctionResponseInput } from './runs/resume.js';
export type { StartAt } from './runs/start-agent.js';
export type {
  EngineObserver,
  ModelCallEnd,
  PrunedRows,
  StepEnd,
  StepRun,
  ToolCallEnd,
} from './observe/observer.js';
export type { PruneOptions, RetentionOptions, RetentionSetting } from './runs/retention.js';
export { AgentloomIdGenerator } from './observe/trace-ids.js';
export { RunSampler } from './observe/trace-sampler.js';
