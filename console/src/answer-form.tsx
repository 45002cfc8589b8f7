/**
 * Answering one paused call: Approve / Reject a confirmation (with an optional note or JSON payload), a JSON
 * response to a long-running call (a remote agent's question: text or JSON, remote-answer.tsx), rerun / skip / fail for an in-doubt call, and the fields a question (an MCP
 * elicitation) asks for with Accept / Decline / Cancel, the credential a tool needs (auth-fields.tsx), and a raise or
 * a stop for a budget pause (budget-answer.tsx). JSON is
 * checked before it is sent. An answer someone gave first (409) is shown with who gave it and when.
 */
import { useState } from 'preact/hooks';
import { ApiError, postJson } from './api';
import { AuthFields } from './auth-fields';
import { BudgetFields } from './budget-answer';
import { ActionButton, LabeledTextarea } from './fields';
import { when } from './format';
import { isRemoteQuestion, RemoteAnswerFields } from './remote-answer';
import type { PendingCall } from './types';

interface Props {
  invocationId: string;
  call: PendingCall;
  /** Called after an answer was stored, to reload what shows the call. */
  onAnswered(): void;
  /**
   * Told what became of each answer sent: the card may vanish at the next reload (the call is no longer pending),
   * so what happened is also said outside it.
   */
  onOutcome?(outcome: Outcome): void;
}

/** What became of an answer: stored, or refused (and why). */
export interface Outcome {
  ok: boolean;
  text: string;
}

/** Parses JSON that must be an object; the error says what to write. */
function parseObject(text: string, what: string): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new Error(
      `${what} is not valid JSON (${(err as Error).message}); write an object such as {"ok": true}`,
    );
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new Error(
      `${what} must be a JSON object such as {"ok": true}, not ${Array.isArray(value) ? 'an array' : typeof value}`,
    );
  }
  return value as Record<string, unknown>;
}

/** A note as a string, or JSON when it parses as JSON. */
function notePayload(text: string): unknown {
  const trimmed = text.trim();
  if (trimmed === '') return undefined;
  try {
    return JSON.parse(trimmed);
  } catch {
    return trimmed;
  }
}

/** The message of a failed answer; a 409 says who answered first. */
function answerError(err: unknown): string {
  if (err instanceof ApiError && err.status === 409) {
    const by = typeof err.details.answeredBy === 'string' ? err.details.answeredBy : undefined;
    const at = typeof err.details.answeredAt === 'string' ? err.details.answeredAt : undefined;
    if (by || at)
      return `Already answered${by ? ` by ${by}` : ''}${at ? ` at ${when(at)}` : ''}: ${err.message}`;
    return `Already answered: ${err.message}`;
  }
  return err instanceof Error ? err.message : String(err);
}

export function AnswerForm({ invocationId, call, onAnswered, onOutcome }: Props) {
  const [note, setNote] = useState('');
  const [json, setJson] = useState('{}');
  const [action, setAction] = useState<'rerun' | 'skip' | 'fail'>('rerun');
  const [message, setMessage] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | undefined>(undefined);
  const base = `/v1/invocations/${encodeURIComponent(invocationId)}`;
  const fieldId = (name: string) => `${call.callId}-${name}`;

  /** Sends an answer; true when it was stored. */
  async function send(verb: string, body: () => { path: string; body: unknown }): Promise<boolean> {
    let request: { path: string; body: unknown };
    try {
      request = body();
    } catch (err) {
      setError((err as Error).message);
      return false;
    }
    setBusy(true);
    setError(undefined);
    try {
      await postJson(request.path, request.body);
      onOutcome?.({ ok: true, text: `${verb} ${call.name} (${call.callId}) of run ${invocationId}.` });
      onAnswered();
      return true;
    } catch (err) {
      const text = answerError(err);
      setError(text);
      onOutcome?.({ ok: false, text: `${call.name} (${call.callId}) of run ${invocationId}: ${text}` });
      return false;
    } finally {
      setBusy(false);
    }
  }

  const confirm = (confirmed: boolean) =>
    send(confirmed ? 'Approved' : 'Rejected', () => {
      const payload = notePayload(note);
      return {
        path: `${base}/confirmations/${encodeURIComponent(call.callId)}`,
        body: payload === undefined ? { confirmed } : { confirmed, payload },
      };
    });

  /** Answers with a function response; `name` is the framework call a request of some kinds answers. */
  const respond = (response: () => Record<string, unknown>, name = call.name) =>
    send('Answered', () => ({
      path: `${base}/responses`,
      body: { functionResponses: [{ id: call.callId, name, response: response() }] },
    }));

  return (
    <form
      class="answer"
      aria-label={`Answer ${call.name}`}
      onSubmit={(e) => {
        e.preventDefault();
      }}
    >
      {call.kind === 'confirmation' && (
        <>
          <label for={fieldId('note')}>Note or JSON payload (optional)</label>
          <input id={fieldId('note')} value={note} onInput={(e) => setNote(e.currentTarget.value)} />
          <div class="buttons">
            <button type="button" class="approve" disabled={busy} onClick={() => void confirm(true)}>
              Approve
            </button>
            <button type="button" class="reject" disabled={busy} onClick={() => void confirm(false)}>
              Reject
            </button>
          </div>
        </>
      )}
      {isRemoteQuestion(call) && (
        <RemoteAnswerFields
          fieldId={fieldId}
          busy={busy}
          parseObject={parseObject}
          onAnswer={(answer) => void respond(answer)}
        />
      )}
      {call.kind === 'long_running' && !isRemoteQuestion(call) && (
        <>
          <LabeledTextarea
            id={fieldId('response')}
            label="Response (JSON object)"
            rows={4}
            value={json}
            onValue={setJson}
          />
          <ActionButton
            busy={busy}
            label="Send response"
            onClick={() => void respond(() => parseObject(json, 'The response'))}
          />
        </>
      )}
      {call.kind === 'in_doubt' && (
        <>
          <p class="hint">
            The call may or may not have run before its worker stopped. Run it again, skip it with the result
            it had, or fail the run.
          </p>
          <label for={fieldId('action')}>Action</label>
          <select
            id={fieldId('action')}
            value={action}
            onChange={(e) => setAction(e.currentTarget.value as 'rerun' | 'skip' | 'fail')}
          >
            <option value="rerun">rerun: run the call again</option>
            <option value="skip">skip: it ran; use this result</option>
            <option value="fail">fail: fail the call</option>
          </select>
          {action === 'skip' && (
            <>
              <LabeledTextarea
                id={fieldId('result')}
                label="Result (JSON object)"
                rows={3}
                value={json}
                onValue={setJson}
              />
            </>
          )}
          {action === 'fail' && (
            <>
              <label for={fieldId('message')}>Message (optional)</label>
              <input
                id={fieldId('message')}
                value={message}
                onInput={(e) => setMessage(e.currentTarget.value)}
              />
            </>
          )}
          <div class="buttons">
            <button
              type="button"
              disabled={busy}
              onClick={() =>
                void respond(() =>
                  action === 'skip'
                    ? { action, result: parseObject(json, 'The result') }
                    : action === 'fail' && message.trim()
                      ? { action, message: message.trim() }
                      : { action },
                )
              }
            >
              Send answer
            </button>
          </div>
        </>
      )}
      {call.kind === 'elicitation' && call.elicitation && (
        <ElicitationFields
          schema={call.elicitation.requestedSchema}
          fieldId={fieldId}
          busy={busy}
          onAnswer={(answer) => void respond(answer)}
        />
      )}
      {call.kind === 'auth' && call.auth && (
        <AuthFields
          auth={call.auth}
          fieldId={fieldId}
          busy={busy}
          onAnswer={(answer) => respond(answer, 'adk_request_credential')}
        />
      )}
      {call.kind === 'budget' && (
        <BudgetFields call={call} fieldId={fieldId} busy={busy} onAnswer={(answer) => void respond(answer)} />
      )}
      {error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
    </form>
  );
}

/** A property of a question's requested schema (MCP keeps them flat: strings, numbers, booleans, enums). */
interface FieldSchema {
  type?: string;
  title?: string;
  description?: string;
  enum?: unknown[];
  default?: unknown;
}

/** The inputs a question's schema asks for, and the answers Accept (with them), Decline and Cancel. */
function ElicitationFields(props: {
  schema: Record<string, unknown>;
  fieldId(name: string): string;
  busy: boolean;
  onAnswer(answer: () => Record<string, unknown>): void;
}) {
  const properties = (props.schema.properties ?? {}) as Record<string, FieldSchema>;
  const required = new Set(Array.isArray(props.schema.required) ? (props.schema.required as string[]) : []);
  const [values, setValues] = useState<Record<string, string | boolean>>(() =>
    Object.fromEntries(
      Object.entries(properties).map(([key, field]) => [
        key,
        field.type === 'boolean'
          ? field.default === true
          : field.default === undefined
            ? ''
            : String(field.default),
      ]),
    ),
  );
  const set = (key: string, value: string | boolean) => setValues((v) => ({ ...v, [key]: value }));

  /** The content to accept with: each field as its type; an empty optional field left out. */
  function content(): Record<string, unknown> {
    const out: Record<string, unknown> = {};
    for (const [key, field] of Object.entries(properties)) {
      const value = values[key];
      if (field.type === 'boolean') {
        out[key] = value === true;
        continue;
      }
      const text = String(value ?? '').trim();
      if (text === '') {
        if (required.has(key)) throw new Error(`${field.title ?? key} is required`);
        continue;
      }
      if (field.type === 'number' || field.type === 'integer') {
        const n = Number(text);
        if (!Number.isFinite(n) || (field.type === 'integer' && !Number.isInteger(n)))
          throw new Error(
            `${field.title ?? key} must be ${field.type === 'integer' ? 'a whole number' : 'a number'}`,
          );
        out[key] = n;
      } else out[key] = text;
    }
    return out;
  }

  return (
    <>
      {Object.entries(properties).map(([key, field]) => {
        const id = props.fieldId(`field-${key}`);
        const label = `${field.title ?? key}${required.has(key) ? ' *' : ''}`;
        const value = values[key];
        return (
          <div class="field" key={key}>
            <label for={id}>{label}</label>
            {field.type === 'boolean' ? (
              <input
                id={id}
                type="checkbox"
                checked={value === true}
                onChange={(e) => set(key, e.currentTarget.checked)}
              />
            ) : Array.isArray(field.enum) ? (
              <select id={id} value={String(value)} onChange={(e) => set(key, e.currentTarget.value)}>
                {!required.has(key) && <option value="">—</option>}
                {field.enum.map((option) => (
                  <option key={String(option)} value={String(option)}>
                    {String(option)}
                  </option>
                ))}
              </select>
            ) : (
              <input
                id={id}
                type="text"
                inputMode={field.type === 'number' || field.type === 'integer' ? 'decimal' : 'text'}
                value={String(value)}
                onInput={(e) => set(key, e.currentTarget.value)}
              />
            )}
            {field.description && <span class="hint">{field.description}</span>}
          </div>
        );
      })}
      <div class="buttons">
        <button
          type="button"
          class="approve"
          disabled={props.busy}
          onClick={() => props.onAnswer(() => ({ action: 'accept', content: content() }))}
        >
          Accept
        </button>
        <button
          type="button"
          class="reject"
          disabled={props.busy}
          onClick={() => props.onAnswer(() => ({ action: 'decline' }))}
        >
          Decline
        </button>
        <button
          type="button"
          disabled={props.busy}
          onClick={() => props.onAnswer(() => ({ action: 'cancel' }))}
        >
          Cancel
        </button>
      </div>
    </>
  );
}
