export * from './content.js';
export * from './errors.js';
export * from './event.js';
export * from './ids.js';
export * from './bus.js';
export * from './deadline.js';
