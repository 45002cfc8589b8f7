/**
 * Offline models for the manifests of this folder: a scripted model registered under the name their
 * `modelConfig` gives (`default-model-config`), which wins over the ModelConfig's Gemini model.
 *
 *   node examples/mcp/notes-server.mjs --http 3001 &     # the RemoteMCPServer notes-http
 *   npx agentloom dev --apps examples/kagent --registry examples/kagent/scripted-models.ts
 *
 * The root hands the request to its Sequential workflow; the writer saves its code as a note with the MCPServer
 * `notes` (a call a human approves first: `requireApproval`), the reviewer searches the notes of the
 * RemoteMCPServer `notes-http` (another process, with a notebook of its own), the refactorer answers.
 */
import { ScriptedModel, type ScriptedTurn } from '../../src/index.js';

const CODE = 'def fib(n):\n    return n if n < 2 else fib(n - 1) + fib(n - 2)';

function reply(turn: ScriptedTurn) {
  const first = turn.callIndex === 0;
  switch (turn.agentName) {
    case 'code_development_pipeline':
      return {
        functionCalls: [
          { name: 'code_development_pipeline_development_pipeline_sequential', args: { request: 'fib' } },
        ],
      };
    case 'code_writer':
      return first ? { functionCalls: [{ name: 'save_note', args: { title: 'fib', text: CODE } }] } : CODE;
    case 'code_reviewer':
      return first
        ? { functionCalls: [{ name: 'search_notes', args: { query: 'fib' } }] }
        : 'fib is exponential: memoise it';
    case 'code_refactorer':
      return 'from functools import cache\n\n@cache\ndef fib(n):\n    return n if n < 2 else fib(n - 1) + fib(n - 2)';
    default:
      return `no script for ${turn.agentName}`;
  }
}

export const models = { 'default-model-config': new ScriptedModel({ respond: reply }) };
