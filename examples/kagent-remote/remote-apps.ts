/**
 * The agents the workflow of this folder calls over A2A, served by another `agentloom dev`:
 *
 *   npx agentloom dev --port 8081 --apps examples/kagent-remote/remote-apps.ts
 *
 * `drafts` drafts code for what it was sent; `review` reviews what it was sent (the request, and the draft as
 * "For context: [code_writer] said: …"). Scripted, so the example runs offline.
 */
import { LlmAgent, ScriptedModel, type AppDefinition, type ScriptedTurn } from '../../src/index.js';

/** What the remote was sent: the texts of the turn's user messages. */
function sent(turn: ScriptedTurn): string {
  return turn.contents
    .filter((c) => c.role === 'user')
    .flatMap((c) => c.parts.flatMap((p) => (p.text ? [p.text] : [])))
    .join('\n');
}

export const apps: AppDefinition[] = [
  {
    name: 'drafts',
    agent: new LlmAgent({
      name: 'drafter',
      description: 'Drafts code',
      model: new ScriptedModel({
        respond: () => 'def fib(n):\n    return n if n < 2 else fib(n - 1) + fib(n - 2)',
      }),
    }),
  },
  {
    name: 'review',
    agent: new LlmAgent({
      name: 'reviewer',
      description: 'Reviews a draft',
      model: new ScriptedModel({
        respond: (turn) =>
          sent(turn).includes('def fib') ? 'fib is exponential: memoise it' : 'no draft to review',
      }),
    }),
  },
];
