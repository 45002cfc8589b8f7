export * from './exit-loop.js';
export * from './function-tool.js';
export * from './tool.js';
export * from './toolset.js';
export { McpToolset, IDEMPOTENCY_META_KEY, type McpToolsetOptions } from './mcp/mcp-toolset.js';
export type { McpConnectionOptions, McpHttpConnection, McpStdioConnection } from './mcp/mcp-connection.js';
export type { AuthCredential, AuthScheme, RawAuthCredential, ToolAuth } from './auth.js';
