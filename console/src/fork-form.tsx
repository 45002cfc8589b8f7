/**
 * "Fork from here" (issue 36): a form for a fork of this run at one node — a state patch (JSON) and an instruction
 * replacing one LlmAgent's — that posts `POST /v1/invocations/:id/fork` and opens the new run.
 */
import { useState } from 'preact/hooks';
import { postJson } from './api';

export function ForkForm({
  invocationId,
  at,
  agents,
  onClose,
}: {
  invocationId: string;
  at: string;
  /** The LlmAgents whose instruction may be replaced. */
  agents: string[];
  onClose(): void;
}) {
  const [state, setState] = useState('');
  const [agent, setAgent] = useState(agents[0] ?? '');
  const [instruction, setInstruction] = useState('');
  const [error, setError] = useState<string | undefined>(undefined);
  const [busy, setBusy] = useState(false);

  async function submit(e: Event) {
    e.preventDefault();
    setError(undefined);
    let patch: unknown;
    if (state.trim() !== '') {
      try {
        patch = JSON.parse(state);
      } catch {
        patch = undefined;
      }
      if (typeof patch !== 'object' || patch === null || Array.isArray(patch)) {
        setError('The state patch must be a JSON object, e.g. {"approve": true}');
        return;
      }
    }
    setBusy(true);
    try {
      const body = {
        at,
        ...(patch ? { state: patch } : {}),
        ...(instruction.trim() !== '' && agent ? { instruction: { [agent]: instruction } } : {}),
      };
      const fork = await postJson<{ invocationId: string }>(
        `/v1/invocations/${encodeURIComponent(invocationId)}/fork`,
        body,
      );
      location.hash = `#/runs/${fork.invocationId}`;
    } catch (err) {
      setError(err instanceof Error ? err.message : String(err));
    } finally {
      setBusy(false);
    }
  }

  return (
    <form class="fork-form" aria-label="Fork this run" onSubmit={(e) => void submit(e)}>
      <h3>
        Fork from <code>{at}</code>
      </h3>
      <p class="hint">
        The steps before it are copied (no model or tool call); it runs live from there with your changes.
      </p>
      <label>
        State patch (JSON)
        <textarea
          rows={3}
          value={state}
          placeholder='{"key": "value"}'
          onInput={(e) => setState(e.currentTarget.value)}
        />
      </label>
      {agents.length > 0 && (
        <label>
          Instruction of
          <select value={agent} onChange={(e) => setAgent(e.currentTarget.value)}>
            {agents.map((name) => (
              <option key={name} value={name}>
                {name}
              </option>
            ))}
          </select>
        </label>
      )}
      {agents.length > 0 && (
        <label>
          New instruction
          <textarea rows={3} value={instruction} onInput={(e) => setInstruction(e.currentTarget.value)} />
        </label>
      )}
      {error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      <div class="actions">
        <button type="submit" disabled={busy}>
          Fork run
        </button>
        <button type="button" onClick={onClose}>
          Close
        </button>
      </div>
    </form>
  );
}
