/**
 * The digest of a model request that a model event records (`actions.modelRequest`): what replay (engine.replay)
 * compares to tell that the current code asks the model something else than the recorded run did — a changed
 * instruction, other tools or tool parameters — without storing the prompt itself (prompts stay out of history).
 */
import { createHash } from 'node:crypto';
import type { ModelRequest } from '../../models/model.js';

/** The recorded shape: short sha-256 digests of the rendered system instruction and of the tool declarations. */
export interface RequestDigest {
  instruction: string;
  tools: string;
}

const sha = (text: string): string => createHash('sha256').update(text).digest('hex').slice(0, 16);

/** The digest of `request`. */
export function requestDigest(request: Pick<ModelRequest, 'systemInstruction' | 'tools'>): RequestDigest {
  return { instruction: sha(request.systemInstruction), tools: sha(JSON.stringify(request.tools)) };
}
