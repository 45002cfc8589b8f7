/**
 * Answering a `budget` pause (README "Budgets"): what was spent against which limit, a new value for that limit
 * with Raise (the run continues where it paused), and Stop (the run is cancelled).
 */
import { useState } from 'preact/hooks';
import type { PendingCall } from './types';

interface BudgetArgs {
  scope?: string;
  limit?: string;
  spent?: number;
  reserved?: number;
  max?: number;
}

/** The facts and controls of a budget pause; `onAnswer` sends the response. */
export function BudgetFields(props: {
  call: PendingCall;
  fieldId(name: string): string;
  busy: boolean;
  onAnswer(answer: () => Record<string, unknown>): void;
}) {
  const args = props.call.args as BudgetArgs;
  const limit = args.limit ?? 'tokens';
  const [value, setValue] = useState(String((args.max ?? 0) * 2 || ''));
  const id = props.fieldId('budget');

  /** The raise: the new value of the crossed limit, checked. */
  function raise(): Record<string, unknown> {
    const n = Number(value.trim());
    const integer = limit !== 'costUsd';
    if (value.trim() === '' || !Number.isFinite(n) || n < 0 || (integer && !Number.isInteger(n))) {
      throw new Error(`Write the new ${limit} limit as ${integer ? 'a whole number' : 'a number'} ≥ 0`);
    }
    return { action: 'raise', budget: { [limit]: n } };
  }

  return (
    <>
      <p class="hint" aria-label="Budget spent">
        {args.scope === 'run' || args.scope === undefined ? 'The run' : `Agent ${args.scope}`} spent{' '}
        {args.spent} of {args.max} {limit}; the next call reserves {args.reserved}.
      </p>
      <label for={id}>New {limit} limit</label>
      <input id={id} inputMode="decimal" value={value} onInput={(e) => setValue(e.currentTarget.value)} />
      <div class="buttons">
        <button type="button" class="approve" disabled={props.busy} onClick={() => props.onAnswer(raise)}>
          Raise budget
        </button>
        <button
          type="button"
          class="reject"
          disabled={props.busy}
          onClick={() => props.onAnswer(() => ({ action: 'stop' }))}
        >
          Stop run
        </button>
      </div>
    </>
  );
}
