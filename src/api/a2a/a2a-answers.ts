/**
 * A message to an A2A task: the text it sends as a new turn, or the answers its DataParts give to the task's paused
 * calls (`{callId, confirmed, payload?}` for a confirmation, `{callId, response}` for any other pending call).
 */
import { RequestMalformedError } from '@a2a-js/sdk/errors';
import type { Message } from '@a2a-js/sdk';
import * as z from 'zod';
import type { Content } from '../../core/content.js';

/** One answer to a paused call, as a DataPart carries it. */
export type CallAnswer =
  | { callId: string; confirmed: boolean; payload?: unknown }
  | { callId: string; response: Record<string, unknown> };

const answerSchema = z.union([
  z.object({ callId: z.string().min(1), confirmed: z.boolean(), payload: z.unknown().optional() }),
  z.object({ callId: z.string().min(1), response: z.record(z.string(), z.unknown()) }),
]);

/** The answers in a message's DataParts; a DataPart that is not an answer is refused (-32602) naming its index. */
export function answersOf(message: Message): CallAnswer[] {
  const answers: CallAnswer[] = [];
  message.parts.forEach((part, index) => {
    if (part.content?.$case !== 'data') return;
    const parsed = answerSchema.safeParse(part.content.value);
    if (!parsed.success) {
      throw new RequestMalformedError(
        `message.parts[${index}]: a DataPart answers a paused call: send {callId, confirmed, payload?} or {callId, response}`,
      );
    }
    answers.push(parsed.data);
  });
  return answers;
}

/** The content of a new turn: the message's text parts (and any file URLs as text). */
export function contentOf(message: Message): Content {
  const parts = message.parts.flatMap((part) => {
    if (part.content?.$case === 'text') return [{ text: part.content.value }];
    if (part.content?.$case === 'url') return [{ text: part.content.value }];
    return [];
  });
  if (parts.length === 0) {
    throw new RequestMalformedError(
      'message.parts: send at least one text part (or DataParts answering a paused call)',
    );
  }
  return { role: 'user', parts };
}
