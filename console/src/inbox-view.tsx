/** The approvals inbox: every call waiting for an answer across the runs this key may see, oldest first. */
import { getJson } from './api';
import { ErrorNote } from './error-note';
import { usePoll, useTick } from './hooks';
import { Outcomes, useOutcomes } from './outcomes';
import { PendingCallCard } from './pending-call';
import type { Inbox } from './types';

export function InboxView({ onChange }: { onChange(): void }) {
  const inbox = usePoll(() => getJson<Inbox>('/v1/pending'), 1500, []);
  const now = useTick(5000);
  const calls = inbox.data?.calls ?? [];
  const [outcomes, addOutcome] = useOutcomes();
  return (
    <section aria-labelledby="inbox-title">
      <h2 id="inbox-title">Approvals inbox</h2>
      <ErrorNote error={inbox.error} />
      <Outcomes outcomes={outcomes} />
      {inbox.data && calls.length === 0 && <p class="empty">Nothing is waiting for an answer.</p>}
      {calls.map((call) => (
        <PendingCallCard
          key={`${call.invocationId}/${call.callId}`}
          invocationId={call.invocationId}
          call={call}
          showRun
          now={now}
          onOutcome={addOutcome}
          onAnswered={() => {
            void inbox.refresh();
            onChange();
          }}
        />
      ))}
      {inbox.data?.more && <p class="more">More calls are waiting than shown; answer these first.</p>}
    </section>
  );
}
