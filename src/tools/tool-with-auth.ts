/**
 * A tool with the credential it needs declared from outside its code: a declarative file's `{ tool: name, auth }`
 * gives a tool registered in code the `auth` option (the auth gate), as if its FunctionTool had been written with
 * it. Everything else is the tool's own.
 */
import { parseToolAuth, type ToolAuth } from './auth.js';
import type { Tool } from './tool.js';

/** `tool`, declaring `auth` (checked; VALIDATION names the field). */
export function withAuth(tool: Tool, auth: ToolAuth): Tool {
  const checked = parseToolAuth(auth, tool.name);
  return {
    name: tool.name,
    description: tool.description,
    isLongRunning: tool.isLongRunning,
    sideEffects: tool.sideEffects,
    auth: checked,
    declaration: () => tool.declaration(),
    requiresConfirmation: (args, ctx) => tool.requiresConfirmation(args, ctx),
    run: (args, ctx) => tool.run(args, ctx),
  };
}
