/** The HTTP API of agentloom: the server, its auth, and the `agentloom api` process. */
export { createApiServer, type ApiServerOptions } from './server.js';
export { authenticate, canSee, parseApiKeys, type ApiKey, type Principal } from './http/auth.js';
export { apiConfig, type ApiConfig, type ApiFlags } from './api-config.js';
export { listenApi, runApi, serveApi, type RunningApi } from './run-api.js';
export type { ApiApp } from './http/context.js';
export type { ApiErrorBody } from './http/errors.js';
