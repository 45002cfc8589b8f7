/** What became of the answers given from this page, newest first (a live region: screen readers hear them). */
import { useState } from 'preact/hooks';
import type { Outcome } from './answer-form';

/** The last outcomes and a function that adds one. */
export function useOutcomes(): [Outcome[], (outcome: Outcome) => void] {
  const [outcomes, setOutcomes] = useState<Outcome[]>([]);
  return [outcomes, (outcome) => setOutcomes((list) => [outcome, ...list].slice(0, 5))];
}

export function Outcomes({ outcomes }: { outcomes: Outcome[] }) {
  return (
    <ul class="outcomes" aria-label="Your answers" aria-live="polite">
      {outcomes.map((o, i) => (
        <li key={`${i}-${o.text}`} class={o.ok ? 'ok' : 'error'}>
          {o.text}
        </li>
      ))}
    </ul>
  );
}
