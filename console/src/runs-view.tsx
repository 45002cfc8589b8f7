/**
 * Runs, newest first: filtered by app, status and user, a page at a time, reloaded every second so a new or
 * changed run shows without a reload. A paused run says it needs someone.
 */
import { useState } from 'preact/hooks';
import { getJson } from './api';
import { ErrorNote } from './error-note';
import { ago, shortId, when } from './format';
import { usePoll, useTick } from './hooks';
import { StatusBadge } from './status-badge';
import type { AppList, InvocationPage } from './types';

const STATUSES = ['queued', 'running', 'paused', 'completed', 'failed', 'cancelled'] as const;
const PAGE = 25;

export function RunsView({ apps }: { apps: AppList['apps'] | undefined }) {
  const [app, setApp] = useState('');
  const [status, setStatus] = useState('');
  const [user, setUser] = useState('');
  // The cursors of the pages before this one; the last is this page's.
  const [cursors, setCursors] = useState<(string | undefined)[]>([undefined]);
  const cursor = cursors[cursors.length - 1];
  const query = new URLSearchParams({ limit: String(PAGE) });
  if (app) query.set('app', app);
  if (status) query.set('status', status);
  if (user.trim()) query.set('userId', user.trim());
  if (cursor) query.set('cursor', cursor);
  const page = usePoll(() => getJson<InvocationPage>(`/v1/invocations?${query}`), 1000, [query.toString()]);
  const now = useTick(5000);
  const filter = (set: (v: string) => void) => (value: string) => {
    set(value);
    setCursors([undefined]);
  };
  const runs = page.data?.invocations ?? [];

  return (
    <section aria-labelledby="runs-title">
      <h2 id="runs-title">Runs</h2>
      <form class="filters" role="search" aria-label="Filter runs" onSubmit={(e) => e.preventDefault()}>
        <label>
          App
          <select value={app} onChange={(e) => filter(setApp)(e.currentTarget.value)}>
            <option value="">all</option>
            {(apps ?? []).map((a) => (
              <option key={a.name} value={a.name}>
                {a.name}
              </option>
            ))}
          </select>
        </label>
        <label>
          Status
          <select value={status} onChange={(e) => filter(setStatus)(e.currentTarget.value)}>
            <option value="">all</option>
            {STATUSES.map((s) => (
              <option key={s} value={s}>
                {s}
              </option>
            ))}
          </select>
        </label>
        <label>
          User
          <input value={user} placeholder="any" onInput={(e) => filter(setUser)(e.currentTarget.value)} />
        </label>
      </form>
      <ErrorNote error={page.error} />
      <table class="runs">
        <thead>
          <tr>
            <th scope="col">Run</th>
            <th scope="col">App</th>
            <th scope="col">User</th>
            <th scope="col">Status</th>
            <th scope="col">Model calls</th>
            <th scope="col">Started</th>
            <th scope="col">Last change</th>
          </tr>
        </thead>
        <tbody>
          {runs.map((run) => (
            <tr key={run.id} class={run.status === 'paused' ? 'needs-you' : undefined} data-run={run.id}>
              <td>
                <a href={`#/runs/${encodeURIComponent(run.id)}`} title={run.id}>
                  {shortId(run.id)}
                </a>
              </td>
              <td>{run.app}</td>
              <td>{run.userId}</td>
              <td>
                <StatusBadge status={run.status} />
                {run.status === 'paused' && <span class="needs">needs you</span>}
                {run.error && <span class="error-code"> {run.error.code}</span>}
              </td>
              <td>
                {run.llmCalls} / {run.maxLlmCalls}
              </td>
              <td title={when(run.createdAt)}>{ago(run.createdAt, now)}</td>
              <td title={when(run.updatedAt)}>{ago(run.updatedAt, now)}</td>
            </tr>
          ))}
        </tbody>
      </table>
      {page.data && runs.length === 0 && <p class="empty">No runs match.</p>}
      <nav class="pager" aria-label="Pages of runs">
        <button
          type="button"
          disabled={cursors.length === 1}
          onClick={() => setCursors(cursors.slice(0, -1))}
        >
          Newer
        </button>
        <button
          type="button"
          disabled={!page.data?.nextCursor}
          onClick={() => page.data?.nextCursor && setCursors([...cursors, page.data.nextCursor])}
        >
          Older
        </button>
      </nav>
    </section>
  );
}
