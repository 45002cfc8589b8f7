/** One paused call as the inbox and the run page show it: what it is, what it asks, and the form that answers it. */
import { AnswerForm, type Outcome } from './answer-form';
import { ago, kindLabel, pretty, shortId, when } from './format';
import { isRemoteQuestion, RemoteQuestionFacts } from './remote-answer';
import type { InboxItem, PendingCall } from './types';

interface Props {
  invocationId: string;
  call: PendingCall & Partial<Pick<InboxItem, 'app' | 'userId' | 'since'>>;
  /** Show which run the call belongs to (the inbox); the run page leaves it out. */
  showRun?: boolean;
  now: number;
  onAnswered(): void;
  onOutcome?(outcome: Outcome): void;
}

export function PendingCallCard({ invocationId, call, showRun, now, onAnswered, onOutcome }: Props) {
  return (
    <article class={`call ${call.kind}`} aria-label={`${call.name} (${kindLabel(call.kind)})`}>
      <header>
        <h3>
          <code>{call.name}</code> <span class={`badge ${call.kind}`}>{kindLabel(call.kind)}</span>
        </h3>
        {call.since && (
          <span class="since" title={when(call.since)}>
            waiting {ago(call.since, now).replace(' ago', '')}
          </span>
        )}
      </header>
      <dl class="facts">
        {showRun && (
          <>
            <dt>Run</dt>
            <dd>
              <a href={`#/runs/${encodeURIComponent(invocationId)}`}>{shortId(invocationId)}</a>
              {call.app && <> · {call.app}</>}
              {call.userId && <> · user {call.userId}</>}
            </dd>
          </>
        )}
        <dt>Agent</dt>
        <dd>
          <code>{call.nodePath}</code>
          {call.branch && <> · branch {call.branch}</>}
        </dd>
        {call.elicitation && (
          <>
            <dt>Asks</dt>
            <dd class="question">
              {call.elicitation.message}
              {call.elicitation.source && <> · from {call.elicitation.source}</>}
            </dd>
          </>
        )}
        {isRemoteQuestion(call) && <RemoteQuestionFacts call={call} />}
        {call.hint && !isRemoteQuestion(call) && (
          <>
            <dt>Hint</dt>
            <dd>{call.hint}</dd>
          </>
        )}
      </dl>
      <pre class="json" aria-label={`Arguments of ${call.name}`}>
        {pretty(call.args)}
      </pre>
      {call.payload !== undefined && (
        <pre class="json" aria-label="Payload">
          {pretty(call.payload)}
        </pre>
      )}
      <AnswerForm invocationId={invocationId} call={call} onAnswered={onAnswered} onOutcome={onOutcome} />
    </article>
  );
}
