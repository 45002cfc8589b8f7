import { FunctionTool } from './function-tool.js';

/**
 * The `exit_loop` tool: ends the innermost enclosing LoopAgent after this step (sets `escalate` and
 * `skipSummarization`).
 */
export const exitLoop = new FunctionTool({
  name: 'exit_loop',
  description: 'Exits the loop. Call this function only when you are instructed to do so.',
  execute: (_args, toolContext) => {
    toolContext.actions.escalate = true;
    toolContext.actions.skipSummarization = true;
    return {};
  },
});
