/**
 * A remote A2A agent's question (a RemoteA2aAgent whose task is `input-required`): what it asks, and the answer that
 * goes back to the remote task — text (`{text}`, a text part), or a JSON object (a data part, e.g. `{callId,
 * confirmed}` for a confirmation another agentloom asks about).
 */
import { useState } from 'preact/hooks';
import { ActionButton, LabeledTextarea } from './fields';
import type { PendingCall } from './types';

/** The long-running call a remote agent's question is asked under. */
export const REMOTE_INPUT = 'agentloom_remote_input';

/** Whether `call` is a remote agent's question. */
export function isRemoteQuestion(call: PendingCall): boolean {
  return call.kind === 'long_running' && call.name === REMOTE_INPUT;
}

/** The question and the remote task it belongs to, for the card's facts. */
export function RemoteQuestionFacts({ call }: { call: PendingCall }) {
  const args = call.args as { question?: unknown; taskId?: unknown };
  const agent = call.nodePath.split('/').at(-1) ?? call.nodePath;
  return (
    <>
      <dt>Remote agent asks</dt>
      <dd class="question">{typeof args.question === 'string' ? args.question : call.hint}</dd>
      <dt>Remote task</dt>
      <dd>
        <code>{String(args.taskId ?? '')}</code> · of {agent}
      </dd>
    </>
  );
}

export function RemoteAnswerFields(props: {
  fieldId(name: string): string;
  busy: boolean;
  /** Sends the answer built by `answer` (which may throw a message for the user). */
  onAnswer(answer: () => Record<string, unknown>): void;
  /** Parses a JSON object; throws what to write instead. */
  parseObject(text: string, what: string): Record<string, unknown>;
}) {
  const { fieldId, busy, onAnswer, parseObject } = props;
  const [text, setText] = useState('');
  const [json, setJson] = useState('{}');
  return (
    <>
      <LabeledTextarea
        id={fieldId('remote-text')}
        label="Your answer (sent to the remote agent)"
        rows={2}
        value={text}
        onValue={setText}
      />
      <ActionButton
        busy={busy}
        label="Send answer"
        onClick={() =>
          onAnswer(() => {
            if (!text.trim()) throw new Error('Write an answer first (or send JSON below).');
            return { text: text.trim() };
          })
        }
      />
      <details>
        <summary>Answer with JSON instead (sent as a data part)</summary>
        <LabeledTextarea
          id={fieldId('remote-json')}
          label="Answer (JSON object)"
          rows={3}
          value={json}
          onValue={setJson}
        />
        <ActionButton
          busy={busy}
          label="Send JSON"
          onClick={() => onAnswer(() => parseObject(json, 'The answer'))}
        />
      </details>
    </>
  );
}
