/**
 * ADK's GlobalInstructionPlugin: one instruction for every agent of every app, put before each model request's
 * system instruction (ADK's replacement for an agent's `globalInstruction`, applied at the App level).
 */
import type { ModelRequest } from '../models/model.js';
import { BasePlugin, type CallbackContext } from './base-plugin.js';

/** The instruction: a text, or a function of the callback context (its state) returning one. */
export type GlobalInstruction = string | ((ctx: CallbackContext) => string | Promise<string>);

/** Options of {@link GlobalInstructionPlugin}. */
export interface GlobalInstructionPluginOptions {
  globalInstruction: GlobalInstruction;
  /** Default `global_instruction`. */
  name?: string;
}

/** Prepends `globalInstruction` to the system instruction of every model request. */
export class GlobalInstructionPlugin extends BasePlugin {
  private readonly instruction: GlobalInstruction;

  constructor(options: GlobalInstructionPluginOptions) {
    super(options?.name ?? 'global_instruction');
    const given: unknown = options?.globalInstruction;
    if (typeof given !== 'string' && typeof given !== 'function') {
      throw new TypeError(
        "GlobalInstructionPlugin: globalInstruction must be a string or a function returning one, e.g. new GlobalInstructionPlugin({ globalInstruction: 'Answer in French.' })",
      );
    }
    this.instruction = options.globalInstruction;
  }

  override async beforeModelCallback(p: {
    callbackContext: CallbackContext;
    llmRequest: ModelRequest;
  }): Promise<undefined> {
    const text =
      typeof this.instruction === 'string' ? this.instruction : await this.instruction(p.callbackContext);
    if (!text) return undefined;
    const request = p.llmRequest;
    // Edited in place: the request goes on down the chain (later plugins, the agent's callbacks, the model).
    request.systemInstruction = request.systemInstruction ? `${text}\n\n${request.systemInstruction}` : text;
    return undefined;
  }
}
