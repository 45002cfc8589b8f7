/**
 * A tool with the credential it needs declared from outside its code: a declarative file's `{ tool: name, auth }`
 * gives a tool registered in code the `auth` option (the auth gate), as if its FunctionTool had been written with
 * it. Everything else is the tool's own.
 */
import { parseToolAuth, type ToolAuth } from './auth.js';
import { wrapTool, type Tool } from './tool.js';

/** `tool`, declaring `auth` (checked; VALIDATION names the field). */
export function withAuth(tool: Tool, auth: ToolAuth): Tool {
  return wrapTool(tool, { auth: parseToolAuth(auth, tool.name) });
}
