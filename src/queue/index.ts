export * from './bullmq-queue.js';
export * from './bus.js';
export * from './in-process-queue.js';
export * from './step-queue.js';
export * from './model-rate-limiter.js';
