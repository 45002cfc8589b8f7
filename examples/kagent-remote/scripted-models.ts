/**
 * An offline model for the root Agent of this folder, registered under its `modelConfig` name: it hands the request
 * to the Sequential workflow of remote agents (offered to it as a tool). As in kagent, the workflow's answer (the
 * reviewer's) is the root's answer: the tool skips summarization, so the model is not called again.
 *
 *   npx agentloom dev --apps examples/kagent-remote --registry examples/kagent-remote/scripted-models.ts
 */
import { ScriptedModel, type ScriptedTurn } from '../../src/index.js';

function reply(turn: ScriptedTurn) {
  const request = turn.contents.find((c) => c.role === 'user')?.parts.find((p) => p.text)?.text ?? '';
  const [workflow] = turn.toolNames;
  return workflow ? { functionCalls: [{ name: workflow, args: { request } }] } : 'no workflow to hand to';
}

export const models = { 'default-model-config': new ScriptedModel({ respond: reply }) };
