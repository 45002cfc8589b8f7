/**
 * The web console of agentloom (served at `/` by `agentloom dev` and `agentloom api`): the runs, a run's tree and
 * live events, and the approvals inbox. When the server has API keys it asks for one, keeps it for the tab's
 * session, and shows only what that key may see.
 */
import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { ApiError, getJson, storeActor, storedActor, storedKey, storeKey } from './api';
import { ErrorNote } from './error-note';
import { useHashRoute, usePoll } from './hooks';
import { InboxView } from './inbox-view';
import { RunView } from './run-view';
import { DiffView } from './diff-view';
import { RunsView } from './runs-view';
import type { AppList, Inbox } from './types';

type Access =
  | { state: 'checking'; error?: string }
  | { state: 'open' }
  | { state: 'keyed' }
  | { state: 'needs-key'; refused?: string };

function SignIn({ refused, onSignedIn }: { refused: string | undefined; onSignedIn(): void }) {
  const [key, setKey] = useState('');
  const [error, setError] = useState(refused);
  const [busy, setBusy] = useState(false);
  async function submit(e: Event) {
    e.preventDefault();
    setBusy(true);
    try {
      await getJson<AppList>('/v1/apps', key.trim());
      storeKey(key.trim());
      onSignedIn();
    } catch (err) {
      setError(
        err instanceof ApiError && err.status === 401
          ? 'That key was refused. Use a key from the server’s AGENTLOOM_API_KEYS (the part after "name:").'
          : `The server did not accept the key: ${(err as Error).message}`,
      );
    } finally {
      setBusy(false);
    }
  }
  return (
    <main class="sign-in">
      <h1>agentloom</h1>
      <form onSubmit={(e) => void submit(e)} aria-labelledby="sign-in-title">
        <h2 id="sign-in-title">Sign in</h2>
        <p>This server needs an API key. It is kept for this tab only and sent as a Bearer token.</p>
        <label for="api-key">API key</label>
        <input
          id="api-key"
          type="password"
          autoComplete="off"
          required
          value={key}
          onInput={(e) => setKey(e.currentTarget.value)}
        />
        <button type="submit" disabled={busy || key.trim() === ''}>
          Sign in
        </button>
        {error && (
          <p class="error" role="alert">
            {error}
          </p>
        )}
      </form>
    </main>
  );
}

function ActorField() {
  const [name, setName] = useState(storedActor());
  return (
    <label class="actor">
      Your name
      <input
        value={name}
        placeholder="for the audit trail"
        maxLength={64}
        onInput={(e) => setName(e.currentTarget.value)}
        onChange={(e) => storeActor(e.currentTarget.value)}
      />
    </label>
  );
}

function Console({ access, onSignOut }: { access: 'open' | 'keyed'; onSignOut(): void }) {
  const route = useHashRoute();
  const apps = usePoll(() => getJson<AppList>('/v1/apps'), 30_000, []);
  const inbox = usePoll(() => getJson<Inbox>('/v1/pending?limit=500'), 3000, []);
  const waiting =
    inbox.data && inbox.data.calls.length > 0
      ? `${inbox.data.calls.length}${inbox.data.more ? '+' : ''}`
      : '';
  const runMatch = /^\/runs\/(.+)$/.exec(route);
  const diffMatch = /^\/diff\/([^/]+)\/([^/]+)$/.exec(route);
  const page = runMatch ? 'run' : diffMatch ? 'diff' : route === '/inbox' ? 'inbox' : 'runs';
  useEffect(() => {
    const title = { run: 'Run', diff: 'Diff', inbox: 'Inbox', runs: 'Runs' }[page];
    document.title = `${title} · agentloom`;
  }, [page]);
  const keyRefused = apps.error instanceof ApiError && apps.error.status === 401;
  useEffect(() => {
    if (keyRefused) onSignOut();
  }, [keyRefused]);
  return (
    <>
      <header class="top">
        <h1>
          <a href="#/">agentloom</a>
        </h1>
        <nav aria-label="Console">
          <a href="#/" aria-current={page === 'runs' ? 'page' : undefined}>
            Runs
          </a>
          <a href="#/inbox" aria-current={page === 'inbox' ? 'page' : undefined}>
            Inbox{waiting && <span class="count"> ({waiting})</span>}
          </a>
        </nav>
        <div class="who">
          {access === 'keyed' ? (
            <button type="button" onClick={onSignOut}>
              Sign out
            </button>
          ) : (
            <ActorField />
          )}
        </div>
      </header>
      <main>
        <ErrorNote error={apps.error} />
        {page === 'run' && runMatch?.[1] ? (
          <RunView id={runMatch[1]} apps={apps.data?.apps} />
        ) : page === 'diff' && diffMatch?.[1] && diffMatch[2] ? (
          <DiffView a={diffMatch[1]} b={diffMatch[2]} />
        ) : page === 'inbox' ? (
          <InboxView onChange={() => void inbox.refresh()} />
        ) : (
          <RunsView apps={apps.data?.apps} />
        )}
      </main>
    </>
  );
}

function App() {
  const [access, setAccess] = useState<Access>({ state: 'checking' });
  const check = async () => {
    try {
      await getJson<AppList>('/v1/apps');
      setAccess({ state: storedKey() ? 'keyed' : 'open' });
    } catch (err) {
      if (err instanceof ApiError && err.status === 401) {
        const hadKey = storedKey() !== undefined;
        storeKey(undefined);
        setAccess({
          state: 'needs-key',
          ...(hadKey ? { refused: 'The key of this tab was refused; sign in again.' } : {}),
        });
      } else {
        setAccess({ state: 'checking', error: (err as Error).message });
        setTimeout(() => void check(), 2000);
      }
    }
  };
  useEffect(() => {
    void check();
  }, []);
  if (access.state === 'checking') {
    return (
      <p class="loading" role="status">
        Connecting to the agentloom API…{access.error ? ` (${access.error}; trying again)` : ''}
      </p>
    );
  }
  if (access.state === 'needs-key')
    return <SignIn refused={access.refused} onSignedIn={() => void check()} />;
  return (
    <Console
      access={access.state}
      onSignOut={() => {
        storeKey(undefined);
        setAccess({ state: 'needs-key' });
      }}
    />
  );
}

const host = document.getElementById('app');
if (host) {
  host.textContent = '';
  render(<App />, host);
}
