export * from './in-process-queue.js';
export * from './step-queue.js';
