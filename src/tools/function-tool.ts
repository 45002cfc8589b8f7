import * as z from 'zod';
import { isTimeoutMs, withDeadline } from '../core/deadline.js';
import { AgentloomError } from '../core/errors.js';
import { zodIssues } from '../core/validation.js';
import type { ToolDeclaration } from '../models/model.js';
import { parseToolAuth, type ToolAuth } from './auth.js';
import type { SideEffects, Tool, ToolContext } from './tool.js';

/** Options of {@link FunctionTool}. */
export interface FunctionToolOptions<S extends z.ZodType<Record<string, unknown>>> {
  name: string;
  description: string;
  /** A zod object; arguments are validated against it before `execute`. Default: no parameters. */
  parameters?: S;
  execute: (args: z.infer<S>, toolContext: ToolContext) => unknown;
  /** `true`, or a predicate over the arguments: a human must confirm the call before it runs. */
  requireConfirmation?:
    boolean | ((args: z.infer<S>, toolContext: ToolContext) => boolean | Promise<boolean>);
  /** The call returns an interim result and the node pauses until a final response arrives. */
  isLongRunning?: boolean;
  /** 'unsafe': a call interrupted by a crash is not re-run but surfaced as an in-doubt request. Default 'idempotent'. */
  sideEffects?: SideEffects;
  /**
   * Longest one call may take (ms). Past it the call's `signal` aborts and the model receives
   * `{ error: "tool … did not finish within timeoutMs …" }`. Default: none (the step's `maxStepMs` bounds it).
   */
  timeoutMs?: number;
  /**
   * The user credential the tool needs (ADK's shape): `{ authScheme: {type: "apiKey", in, name} | {type: "http",
   * scheme: "bearer" | "basic"}, credentialKey? }`. The call pauses (kind `auth`) until the run's user provides
   * one; `execute` reads it from `toolContext.credential`.
   */
  auth?: ToolAuth;
}

const NAME = /^[A-Za-z_][A-Za-z0-9_.-]{0,63}$/;

/** A tool backed by a TypeScript function with zod-validated arguments. */
export class FunctionTool<S extends z.ZodType<Record<string, unknown>> = z.ZodObject> implements Tool {
  readonly name: string;
  readonly description: string;
  readonly isLongRunning: boolean;
  readonly sideEffects: SideEffects;
  private readonly parameters: S | undefined;
  private readonly execute: FunctionToolOptions<S>['execute'];
  private readonly confirm: FunctionToolOptions<S>['requireConfirmation'];
  readonly auth: ToolAuth | undefined;
  /** Deadline of one call (ms), if any. */
  readonly timeoutMs: number | undefined;

  constructor(options: FunctionToolOptions<S>) {
    if (typeof options?.name !== 'string' || !NAME.test(options.name)) {
      throw new AgentloomError(
        'VALIDATION',
        `tool name "${String(options?.name)}" is not valid: use letters, digits and _ (e.g. "get_weather")`,
        {
          details: { field: 'name' },
        },
      );
    }
    if (typeof options.execute !== 'function') {
      throw new AgentloomError('VALIDATION', `tool "${options.name}": execute must be a function`, {
        details: { field: 'execute' },
      });
    }
    this.name = options.name;
    this.auth = options.auth === undefined ? undefined : parseToolAuth(options.auth, options.name);
    this.description = options.description ?? '';
    this.parameters = options.parameters;
    this.execute = options.execute;
    this.confirm = options.requireConfirmation;
    this.isLongRunning = options.isLongRunning ?? false;
    this.sideEffects = options.sideEffects ?? 'idempotent';
    if (!isTimeoutMs(options.timeoutMs)) {
      throw new AgentloomError(
        'VALIDATION',
        `tool "${options.name}": timeoutMs must be a positive number of milliseconds, e.g. 30000`,
        { details: { field: 'timeoutMs' } },
      );
    }
    this.timeoutMs = options.timeoutMs;
  }

  declaration(): ToolDeclaration {
    if (!this.parameters) return { name: this.name, description: this.description };
    const schema = z.toJSONSchema(this.parameters, {
      target: 'openapi-3.0',
      unrepresentable: 'any',
    }) as Record<string, unknown>;
    delete schema.$schema;
    return { name: this.name, description: this.description, parameters: schema };
  }

  private parse(args: Record<string, unknown>): z.infer<S> {
    if (!this.parameters) return args as z.infer<S>;
    const parsed = this.parameters.safeParse(args);
    if (!parsed.success) {
      throw new AgentloomError(
        'VALIDATION',
        `invalid arguments for tool "${this.name}": ${zodIssues(parsed.error)}`,
        {
          details: { tool: this.name },
        },
      );
    }
    return parsed.data;
  }

  async requiresConfirmation(args: Record<string, unknown>, ctx: ToolContext): Promise<boolean> {
    if (typeof this.confirm === 'function') {
      const parsed = this.parameters
        ? this.parameters.safeParse(args)
        : { success: true as const, data: args };
      return parsed.success ? Boolean(await this.confirm(parsed.data as z.infer<S>, ctx)) : false;
    }
    return this.confirm === true;
  }

  async run(args: Record<string, unknown>, ctx: ToolContext): Promise<unknown> {
    const parsed = this.parse(args);
    if (this.timeoutMs === undefined) return this.execute(parsed, ctx);
    return withDeadline(
      // The same context with a signal that also aborts at the deadline.
      async (signal) =>
        this.execute(parsed, Object.create(ctx, { signal: { value: signal } }) as ToolContext),
      {
        parent: ctx.signal,
        timeoutMs: this.timeoutMs,
        error: () =>
          new AgentloomError(
            'TIMEOUT',
            `tool "${this.name}" did not finish within timeoutMs (${this.timeoutMs} ms); raise timeoutMs on the tool if it needs longer`,
            { details: { tool: this.name, timeoutMs: this.timeoutMs } },
          ),
      },
    );
  }
}
