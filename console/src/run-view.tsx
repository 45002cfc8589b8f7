/**
 * One run, explained: its status, output or error and model calls against the budget; the calls waiting for an
 * answer (answered here); the node tree; the events, streamed live through pauses; the session state; and the audit
 * trail of every paused call (who answered, when). Cancel and retry act on it.
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import { followEvents, getJson, postJson, type ApiError } from './api';
import { ErrorNote } from './error-note';
import { ago, kindLabel, pretty, when } from './format';
import { usePoll, useTick } from './hooks';
import { NodeTree } from './node-tree';
import { ForkForm } from './fork-form';
import { Outcomes, useOutcomes } from './outcomes';
import { PendingCallCard } from './pending-call';
import { StatusBadge } from './status-badge';
import { Timeline } from './timeline';
import type { ApiEvent, AppList, Invocation, NodeList, Session, ToolRequestList } from './types';

const ENDED = new Set(['completed', 'failed', 'cancelled']);

/** The run's events: streamed from the start, resumed after drops, restarted when an ended run runs again. */
function useEvents(id: string, running: boolean, onChange: () => void) {
  const [events, setEvents] = useState<ApiEvent[]>([]);
  const [connection, setConnection] = useState<'live' | 'ended' | 'retrying' | 'refused'>('live');
  const [streamError, setStreamError] = useState<ApiError | undefined>(undefined);
  const [round, setRound] = useState(0);
  const last = useRef(0);
  const onChangeRef = useRef(onChange);
  onChangeRef.current = onChange;

  useEffect(() => {
    setEvents([]);
    last.current = 0;
  }, [id]);

  useEffect(() => {
    const abort = new AbortController();
    setConnection('live');
    void followEvents(
      id,
      last.current,
      {
        onEvent(event) {
          if (event.seq <= last.current) return;
          last.current = event.seq;
          setEvents((list) => [...list, event]);
          onChangeRef.current();
        },
        onStatus(_status, ended) {
          if (ended) setConnection('ended');
          onChangeRef.current();
        },
        onConnection(open, error) {
          setConnection(
            open ? 'live' : error && error.status < 500 && error.status !== 429 ? 'refused' : 'retrying',
          );
          setStreamError(error);
        },
      },
      abort.signal,
    );
    return () => abort.abort();
  }, [id, round]);

  // A retried run streams again from where the last stream stopped.
  useEffect(() => {
    if (running && connection === 'ended') setRound((r) => r + 1);
  }, [running, connection]);

  return { events, connection, streamError };
}

function Summary({ run, now }: { run: Invocation; now: number }) {
  return (
    <dl class="summary">
      <dt>Status</dt>
      <dd>
        <StatusBadge status={run.status} />
        {run.status === 'paused' && <span class="needs">needs you</span>}
        {run.escalated && <span class="flag">escalated</span>}
      </dd>
      <dt>App</dt>
      <dd>{run.app}</dd>
      <dt>User</dt>
      <dd>{run.userId}</dd>
      {run.forkedFrom && (
        <>
          <dt>Forked from</dt>
          <dd class="forked-from">
            <a href={`#/runs/${run.forkedFrom}`}>{run.forkedFrom}</a>
            {typeof run.fork?.at === 'string' && (
              <>
                {' '}
                at <code>{run.fork.at}</code>
              </>
            )}{' '}
            · <a href={`#/diff/${run.forkedFrom}/${run.id}`}>Diff with the original</a>
          </dd>
        </>
      )}
      <dt>Session</dt>
      <dd>
        <code>{run.sessionId}</code>
      </dd>
      <dt>Started</dt>
      <dd title={run.createdAt}>
        {when(run.createdAt)} ({ago(run.createdAt, now)})
      </dd>
      <dt>Last change</dt>
      <dd title={run.updatedAt}>{ago(run.updatedAt, now)}</dd>
      <dt>Trace</dt>
      <dd class="trace">
        {run.traceUrl ? (
          <a href={run.traceUrl} target="_blank" rel="noopener noreferrer">
            <code>{run.traceId}</code>
          </a>
        ) : (
          <code>{run.traceId}</code>
        )}
      </dd>
      <dt>Model calls</dt>
      <dd>
        <meter
          min={0}
          max={run.maxLlmCalls}
          value={run.llmCalls}
          aria-label="Model calls against the budget"
        />{' '}
        {run.llmCalls} of {run.maxLlmCalls}
      </dd>
      {run.output !== null && (
        <>
          <dt>Output</dt>
          <dd class="output">{run.output}</dd>
        </>
      )}
      {run.error && (
        <>
          <dt>Error</dt>
          <dd class="error">
            <strong>{run.error.code}</strong>: {run.error.message}
          </dd>
        </>
      )}
    </dl>
  );
}

function AuditTrail({ requests }: { requests: ToolRequestList['requests'] }) {
  if (requests.length === 0) return <p class="empty">This run has not paused for an answer.</p>;
  return (
    <table class="audit">
      <thead>
        <tr>
          <th scope="col">Call</th>
          <th scope="col">Kind</th>
          <th scope="col">Asked</th>
          <th scope="col">State</th>
          <th scope="col">Answered by</th>
          <th scope="col">Answered</th>
          <th scope="col">Answer</th>
        </tr>
      </thead>
      <tbody>
        {requests.map((r) => (
          <tr key={r.callId} data-call={r.callId}>
            <td>
              <code>{r.name}</code> <small>{r.nodePath}</small>
            </td>
            <td>{kindLabel(r.kind)}</td>
            <td>{when(r.createdAt)}</td>
            <td>{r.status === 'cancelled' ? 'withdrawn (run cancelled)' : r.status}</td>
            <td class="answered-by">{r.status === 'answered' ? (r.answeredBy ?? 'anonymous') : ''}</td>
            <td>{r.answeredAt ? when(r.answeredAt) : ''}</td>
            <td>{r.response !== null && <code class="answer-json">{JSON.stringify(r.response)}</code>}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

/** The LlmAgents of an app's tree, by name (a fork may replace their instructions). */
function llmAgents(root: AppList['apps'][number]['root'] | undefined): string[] {
  if (!root) return [];
  const own = root.kind === 'llm' ? [root.name] : [];
  return [...own, ...root.children.flatMap((c) => llmAgents(c as typeof root))];
}

export function RunView({ id, apps }: { id: string; apps: AppList['apps'] | undefined }) {
  const path = `/v1/invocations/${encodeURIComponent(id)}`;
  const run = usePoll(() => getJson<Invocation>(path), 2000, [id]);
  const nodes = usePoll(() => getJson<NodeList>(`${path}/nodes`), 2000, [id]);
  const requests = usePoll(() => getJson<ToolRequestList>(`${path}/requests`), 3000, [id]);
  const sessionId = run.data?.sessionId;
  const session = usePoll(
    () =>
      sessionId
        ? getJson<Session>(`/v1/sessions/${encodeURIComponent(sessionId)}`)
        : Promise.resolve(undefined),
    3000,
    [sessionId],
  );
  const [actionError, setActionError] = useState<string | undefined>(undefined);
  const [busy, setBusy] = useState(false);
  const [forkAt, setForkAt] = useState<string | undefined>(undefined);
  const now = useTick(2000);
  const [outcomes, addOutcome] = useOutcomes();
  const refreshAll = () => {
    void run.refresh();
    void nodes.refresh();
    void requests.refresh();
    void session.refresh();
  };
  // Events arrive in bursts: one reload of the rest per burst.
  const pendingRefresh = useRef<ReturnType<typeof setTimeout> | undefined>(undefined);
  const onStreamChange = () => {
    if (pendingRefresh.current) return;
    pendingRefresh.current = setTimeout(() => {
      pendingRefresh.current = undefined;
      refreshAll();
    }, 150);
  };
  useEffect(() => () => clearTimeout(pendingRefresh.current), []);
  const status = run.data?.status;
  const { events, connection, streamError } = useEvents(
    id,
    status !== undefined && !ENDED.has(status),
    onStreamChange,
  );
  const root = apps?.find((a) => a.name === run.data?.app)?.root;

  async function act(what: 'cancel' | 'retry') {
    setBusy(true);
    setActionError(undefined);
    try {
      await postJson(`${path}/${what}`);
      refreshAll();
    } catch (err) {
      setActionError(err instanceof Error ? err.message : String(err));
    } finally {
      setBusy(false);
    }
  }

  if (run.error && !run.data) {
    return (
      <section aria-labelledby="run-title">
        <h2 id="run-title">Run {id}</h2>
        <ErrorNote error={run.error} />
        <p>
          <a href="#/">Back to the runs</a>
        </p>
      </section>
    );
  }
  if (!run.data) return <p class="loading">Loading run {id}…</p>;
  const data = run.data;
  return (
    <section aria-labelledby="run-title" class="run">
      <h2 id="run-title">
        Run <code>{data.id}</code>
      </h2>
      <ErrorNote error={run.error} />
      <div class="actions">
        {!ENDED.has(data.status) && (
          <button type="button" class="danger" disabled={busy} onClick={() => void act('cancel')}>
            Cancel run
          </button>
        )}
        {(data.status === 'failed' || data.status === 'cancelled') && (
          <button type="button" disabled={busy} onClick={() => void act('retry')}>
            Retry run
          </button>
        )}
        {actionError && (
          <p class="error" role="alert">
            {actionError}
          </p>
        )}
      </div>
      <Summary run={data} now={now} />
      <Outcomes outcomes={outcomes} />
      {data.pending.length > 0 && (
        <section aria-labelledby="waiting-title" class="waiting">
          <h3 id="waiting-title">Waiting for an answer</h3>
          {data.pending.map((call) => (
            <PendingCallCard
              key={call.callId}
              invocationId={data.id}
              call={call}
              now={now}
              onAnswered={refreshAll}
              onOutcome={addOutcome}
            />
          ))}
        </section>
      )}
      <div class="columns">
        <section aria-labelledby="tree-title">
          <h3 id="tree-title">Tree</h3>
          <ErrorNote error={nodes.error} />
          {forkAt && (
            <ForkForm
              invocationId={data.id}
              at={forkAt}
              agents={llmAgents(root)}
              onClose={() => setForkAt(undefined)}
            />
          )}
          {nodes.data && (
            <NodeTree
              nodes={nodes.data.nodes}
              root={root}
              now={now}
              onFork={data.status === 'completed' || data.status === 'failed' ? setForkAt : undefined}
            />
          )}
        </section>
        <section aria-labelledby="events-title">
          <h3 id="events-title">
            Events{' '}
            <span class={`stream stream-${connection}`} role="status">
              {connection === 'live'
                ? 'live'
                : connection === 'ended'
                  ? 'run ended'
                  : connection === 'refused'
                    ? 'not streaming'
                    : 'reconnecting…'}
            </span>
          </h3>
          <ErrorNote error={streamError} />
          <Timeline events={events} />
        </section>
      </div>
      <section aria-labelledby="state-title">
        <h3 id="state-title">Session state</h3>
        <ErrorNote error={session.error} />
        {session.data && <pre class="json state">{pretty(session.data.state)}</pre>}
      </section>
      <section aria-labelledby="audit-title">
        <h3 id="audit-title">Answers (audit trail)</h3>
        <ErrorNote error={requests.error} />
        {requests.data && <AuditTrail requests={requests.data.requests} />}
      </section>
    </section>
  );
}
