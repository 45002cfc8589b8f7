/**
 * The crash guard of an unsafe RemoteA2aAgent (`sideEffects: 'unsafe'`): a remote that may not recognise a message
 * sent again under the same id (not agentloom: no idempotency by messageId) must not get it twice. Before the
 * message leaves, a start marker is stored (`actions.agentState.remoteSending`); a re-run that finds the marker and
 * no stored task id does not know whether the remote took the message, so the node pauses with an in-doubt call
 * (`agentloom_remote_send`) for a human to choose: rerun (send again, under a new marker), skip with a result (the
 * node's output) or fail.
 */
import { newId } from '../../core/ids.js';
import type { Event } from '../../core/event.js';
import type { LeafOutcome, NodeRuntime, PauseRequest } from '../context.js';
import { answerOf, askIdOf } from './remote-input.js';

/** Name of the in-doubt call a remote agent's unconfirmed send is asked under. */
export const REMOTE_SEND = 'agentloom_remote_send';

/** The call id of the latest start marker of this node, if any. */
function latestSend(journal: readonly Event[], agent: string): string | undefined {
  let callId: string | undefined;
  for (const event of journal) {
    if (event.author !== agent) continue;
    const marker = event.actions.agentState?.remoteSending as { callId?: string } | undefined;
    if (marker?.callId) callId = marker.callId;
  }
  return callId;
}

async function markSend(rt: NodeRuntime, agent: string): Promise<void> {
  // Stored before the message leaves (emit, not deferred): a crash after the send finds it and asks a human.
  await rt.emit({
    author: agent,
    actions: {
      stateDelta: {},
      artifactDelta: {},
      agentState: { remoteSending: { callId: newId('remote_send') } },
    },
  });
  await rt.fault('after-remote-start');
}

function inDoubt(callId: string, askId: string, agent: string, messageId: string): PauseRequest {
  const hint =
    `remote agent ${agent}: a worker stopped after sending its message (${messageId}) and before the remote's ` +
    'task id was stored; the remote may or may not be working on it. Answer rerun (send it again), skip with a ' +
    'result (the answer to use) or fail.';
  return {
    callId: askId,
    kind: 'in_doubt',
    name: REMOTE_SEND,
    args: { agent, messageId },
    originalCallId: callId,
    hint,
  };
}

/**
 * Runs before an unsafe remote's message is sent (no task id stored): stores the start marker and returns
 * undefined when the message may be sent; returns the node's outcome when it must not (in doubt, skipped, failed).
 */
export async function guardUnsafeSend(
  rt: NodeRuntime,
  options: { agent: string; outputKey: string | undefined; messageId: string },
): Promise<LeafOutcome | undefined> {
  const { agent } = options;
  const callId = latestSend(rt.journal, agent);
  if (!callId) {
    await markSend(rt, agent);
    return undefined;
  }
  const answer = answerOf(rt.journal, callId);
  if (!answer) {
    // Asked again under a new id when the run was cancelled while it waited, then retried.
    const request = inDoubt(callId, askIdOf(rt.withdrawnCalls, callId), agent, options.messageId);
    const asked = rt.journal.some((e) => e.content?.parts.some((p) => p.functionCall?.id === callId));
    if (!asked) {
      await rt.emitDeferred({
        author: agent,
        content: {
          role: 'model',
          parts: [{ functionCall: { id: callId, name: REMOTE_SEND, args: request.args } }],
        },
        longRunningToolIds: [callId],
        actions: { stateDelta: {}, artifactDelta: {} },
      });
    }
    return { status: 'paused', requests: [request] };
  }
  if (answer.action === 'skip') {
    const result = answer.result;
    const text =
      typeof result === 'string'
        ? result
        : typeof (result as { text?: unknown })?.text === 'string'
          ? (result as { text: string }).text
          : JSON.stringify(result ?? {});
    await rt.emitDeferred({
      author: agent,
      content: { role: 'model', parts: [{ text }] },
      actions: { stateDelta: options.outputKey ? { [options.outputKey]: text } : {}, artifactDelta: {} },
    });
    return { status: 'completed', output: text };
  }
  if (answer.action === 'fail') {
    const said = typeof answer.message === 'string' ? answer.message : 'abandoned after a crash';
    return {
      status: 'failed',
      error: { code: 'REMOTE_AGENT', message: `remote agent ${agent}: its message was in doubt: ${said}` },
    };
  }
  // rerun: send again, under a new marker (a crash after this send is in doubt again).
  await markSend(rt, agent);
  return undefined;
}
