/**
 * Two runs side by side (issue 36): node by node, aligned by node path — status, output, tool calls, model calls
 * and time — with the first divergence marked. `GET /v1/diff?a&b`.
 */
import { getJson } from './api';
import { ErrorNote } from './error-note';
import { usePoll } from './hooks';
import type { RunDiff } from './types';

type Side = RunDiff['nodes'][number]['a'];

function SideCell({ side }: { side: Side }) {
  if (!side) return <td class="absent">did not run</td>;
  return (
    <td>
      <span class={`status status-${side.status}`}>{side.status}</span>{' '}
      <small>
        {side.modelCalls} model{side.tokens === null ? '' : ` · ${side.tokens} tokens`} ·{' '}
        {Math.round(side.durationMs)} ms
      </small>
      {side.toolCalls.length > 0 && (
        <div class="calls">
          {side.toolCalls.map((c, i) => (
            <code key={i}>
              {c.name}({JSON.stringify(c.args)})
            </code>
          ))}
        </div>
      )}
      {side.output !== null && <div class="output">{side.output}</div>}
    </td>
  );
}

export function DiffView({ a, b }: { a: string; b: string }) {
  const diff = usePoll(
    () => getJson<RunDiff>(`/v1/diff?a=${encodeURIComponent(a)}&b=${encodeURIComponent(b)}`),
    3000,
    [a, b],
  );
  return (
    <section aria-labelledby="diff-title" class="diff">
      <h2 id="diff-title">Diff</h2>
      <ErrorNote error={diff.error} />
      {diff.data && (
        <>
          <p class="first-divergence-note" role="status">
            {diff.data.firstDivergence ? (
              <>
                First divergence: <code>{diff.data.firstDivergence}</code>
              </>
            ) : (
              'No divergence: the runs did the same.'
            )}
          </p>
          <table class="diff-table">
            <thead>
              <tr>
                <th scope="col">Node</th>
                <th scope="col">
                  A <a href={`#/runs/${diff.data.a.id}`}>{diff.data.a.id}</a>
                </th>
                <th scope="col">
                  B <a href={`#/runs/${diff.data.b.id}`}>{diff.data.b.id}</a>
                </th>
              </tr>
            </thead>
            <tbody>
              {diff.data.nodes.map((row) => (
                <tr
                  key={row.path}
                  data-path={row.path}
                  class={`${row.same ? 'same' : 'differs'}${row.path === diff.data?.firstDivergence ? ' first-divergence' : ''}`}
                >
                  <th scope="row">
                    <code>{row.path}</code>
                    {row.path === diff.data?.firstDivergence && <span class="flag">first divergence</span>}
                  </th>
                  <SideCell side={row.a} />
                  <SideCell side={row.b} />
                </tr>
              ))}
            </tbody>
          </table>
        </>
      )}
    </section>
  );
}
