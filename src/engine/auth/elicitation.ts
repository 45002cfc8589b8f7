/**
 * A tool call's question to the user while it is open (ToolContext.elicit; an MCP server's `elicitation/create`).
 * The request is stored, fenced by the step's attempt, as the node's event (a {@link REQUEST_ELICITATION} call) and
 * as a pending call of kind `elicitation`, in one transaction; the step then waits for the answer, reading that
 * row every {@link ELICITATION_POLL_MS} (whichever process took the answer stored it: resume.ts). No answer within
 * the timeout → the row expires and the answer is `decline` (stored as the node's event); a cancelled run, or a
 * request withdrawn because another attempt took the node over → `cancel` marked `withdrawn` (nobody answered: the
 * row may be seen cancelled before the step's signal aborts, so the mark, not the signal, tells the caller). The
 * step keeps its lease meanwhile, as during any long tool call.
 */
import { REQUEST_ELICITATION } from '../../agents/llm/journal.js';
import type { Event, NewEvent } from '../../core/event.js';
import { newId } from '../../core/ids.js';
import { appendEventTx, type AppendEventInput } from '../../store/repos/events.js';
import type { Store } from '../../store/store.js';
import {
  expireToolRequestTx,
  findToolRequest,
  insertToolRequestsTx,
} from '../../store/repos/tool-requests.js';
import type { ElicitationAnswer, ElicitationRequest } from '../../tools/tool.js';

/** The step a question is asked from. */
export interface AskScope {
  store: Store;
  signal: AbortSignal;
  invocationId: string;
  nodePath: string;
  branch: string | undefined;
  /** The node's agent: the author of the request event (and of an expiry). */
  author: string;
  /** The node's event as an append input under the attempt's fence. */
  appendInput(event: NewEvent): AppendEventInput;
  /** Told of each event stored. */
  stored(event: Event): void;
}

/** How often a step waiting for an elicitation's answer reads its row (ms). */
export const ELICITATION_POLL_MS = 500;

/** Resolves after `ms`, or at once when `signal` aborts. */
function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, Math.max(0, ms));
    signal.addEventListener('abort', done, { once: true });
  });
}

/** A stored answer (checked when it was given) as an {@link ElicitationAnswer}. */
function elicitationAnswerOf(response: Record<string, unknown> | null): ElicitationAnswer {
  const action = response?.action;
  if (action === 'accept') {
    const content = response?.content;
    return {
      action,
      content: typeof content === 'object' && content !== null ? (content as Record<string, unknown>) : {},
    };
  }
  return { action: action === 'cancel' ? 'cancel' : 'decline' };
}

/** The answer when nobody answered: the question was withdrawn (a cancelled run, a stopped step). */
export function withdrawnAnswer(): ElicitationAnswer {
  return { action: 'cancel', withdrawn: true };
}

/** The open tool call that asks. */
export interface ElicitingCall {
  id: string;
  name: string;
  args: Record<string, unknown>;
}

/** Asks (see the file's comment). */
export async function askDuringCall(
  scope: AskScope,
  call: ElicitingCall,
  request: ElicitationRequest,
): Promise<ElicitationAnswer> {
  const id = newId('elicit');
  const question = {
    functionCallId: call.id,
    name: call.name,
    message: request.message,
    requestedSchema: request.requestedSchema,
    ...(request.source !== undefined ? { source: request.source } : {}),
  };
  const stored = await scope.store.transaction(async (tx) => {
    const event = await appendEventTx(
      tx,
      scope.appendInput({
        author: scope.author,
        content: {
          role: 'model',
          parts: [{ functionCall: { id, name: REQUEST_ELICITATION, args: question } }],
        },
        longRunningToolIds: [id],
      }),
    );
    await insertToolRequestsTx(tx, [
      {
        invocationId: scope.invocationId,
        callId: id,
        nodePath: scope.nodePath,
        kind: 'elicitation',
        status: 'pending',
        request: {
          name: call.name,
          args: call.args,
          originalCallId: call.id,
          branch: scope.branch ?? null,
          elicitation: {
            message: request.message,
            requestedSchema: request.requestedSchema,
            ...(request.source !== undefined ? { source: request.source } : {}),
          },
        },
      },
    ]);
    return event;
  });
  scope.stored(stored);
  const deadline = Date.now() + request.timeoutMs;
  for (;;) {
    if (scope.signal.aborted) return withdrawnAnswer();
    const row = await findToolRequest(scope.store.db, id, scope.invocationId);
    if (row?.status === 'answered') return elicitationAnswerOf(row.response);
    // Cancelled with the run, or withdrawn because another attempt took the node over.
    if (row?.status !== 'pending') return withdrawnAnswer();
    if (Date.now() >= deadline) break;
    await sleep(Math.min(ELICITATION_POLL_MS, deadline - Date.now()), scope.signal);
  }
  // No answer in time: decline, unless an answer arrived just now (then it stands).
  const declined = { action: 'decline' as const };
  const expired = await scope.store.transaction(async (tx) => {
    const done = await expireToolRequestTx(tx, scope.invocationId, id, {
      ...declined,
      reason: `no answer within ${request.timeoutMs} ms`,
    });
    if (!done) return undefined;
    return appendEventTx(
      tx,
      scope.appendInput({
        author: scope.author,
        content: {
          role: 'user',
          parts: [
            {
              functionResponse: {
                id,
                name: REQUEST_ELICITATION,
                response: { ...declined, reason: `no answer within ${request.timeoutMs} ms` },
              },
            },
          ],
        },
      }),
    );
  });
  if (expired) {
    scope.stored(expired);
    return declined;
  }
  const row = await findToolRequest(scope.store.db, id, scope.invocationId);
  return row?.status === 'answered' ? elicitationAnswerOf(row.response) : withdrawnAnswer();
}
