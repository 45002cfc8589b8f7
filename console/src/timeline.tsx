/**
 * A run's events as a timeline: who wrote each (author, branch, agent path), its text, function calls and
 * responses, state changes, checkpoints, escalations and errors with their code.
 */
import { pretty, when } from './format';
import type { ApiEvent } from './types';

function EventBody({ event }: { event: ApiEvent }) {
  const parts = event.content?.parts ?? [];
  const actions = event.actions;
  const delta = Object.keys(actions.stateDelta ?? {}).length > 0 ? actions.stateDelta : undefined;
  const confirmations = actions.requestedToolConfirmations;
  return (
    <div class="event-body">
      {parts.map((part, i) => (
        <div key={i} class="part">
          {part.text !== undefined && <p class={part.thought ? 'thought' : 'text'}>{part.text}</p>}
          {part.functionCall && (
            <div class="function-call">
              <span class="label">calls</span> <code>{part.functionCall.name}</code>
              <pre class="json">{pretty(part.functionCall.args ?? {})}</pre>
            </div>
          )}
          {part.functionResponse && (
            <div class="function-response">
              <span class="label">response of</span> <code>{part.functionResponse.name}</code>
              <pre class="json">{pretty(part.functionResponse.response)}</pre>
            </div>
          )}
        </div>
      ))}
      {event.errorCode && (
        <p class="error">
          <strong>{event.errorCode}</strong>
          {event.errorMessage ? `: ${event.errorMessage}` : ''}
        </p>
      )}
      {delta && (
        <div class="delta">
          <span class="label">state</span>
          <pre class="json">{pretty(delta)}</pre>
        </div>
      )}
      {actions.agentState && (
        <p class="checkpoint">
          <span class="label">checkpoint</span> <code>{JSON.stringify(actions.agentState)}</code>
        </p>
      )}
      {confirmations && Object.keys(confirmations).length > 0 && (
        <p class="asks">
          <span class="label">asks for confirmation</span> {Object.keys(confirmations).length} call(s)
        </p>
      )}
      {event.longRunningToolIds && event.longRunningToolIds.length > 0 && (
        <p class="asks">
          <span class="label">waits for</span> {event.longRunningToolIds.length} long-running call(s)
        </p>
      )}
      {actions.escalate && <p class="flag">escalates</p>}
      {actions.transferToAgent && <p class="flag">transfers to {actions.transferToAgent}</p>}
      {actions.endOfAgent && <p class="flag">agent ended</p>}
    </div>
  );
}

export function Timeline({ events }: { events: ApiEvent[] }) {
  if (events.length === 0) return <p class="empty">No events yet.</p>;
  return (
    <ol class="timeline" aria-label="Events">
      {events.map((event) => (
        <li
          key={event.seq}
          class={`event author-${event.author === 'user' ? 'user' : 'agent'}`}
          data-seq={event.seq}
        >
          <div class="event-head">
            <span class="seq">#{event.seq}</span> <strong class="author">{event.author}</strong>
            {event.branch && <span class="branch">{event.branch}</span>}
            {event.nodePath && <code class="path">{event.nodePath}</code>}
            <time dateTime={new Date(event.timestamp).toISOString()}>{when(event.timestamp)}</time>
          </div>
          <EventBody event={event} />
        </li>
      ))}
    </ol>
  );
}
