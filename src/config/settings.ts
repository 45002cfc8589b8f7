/**
 * Settings groups and the one parser that composes them: a process's configuration is a list of groups (zod fields
 * + how flags then environment fill them + cross-field rules), parsed once into a frozen object. Calls zod only.
 */
import * as z from 'zod';
import { AgentloomError } from '../core/errors.js';
import type { EnvConfig } from './env.js';

/** Where a group's raw values come from: commander's flags (strings) and the parsed environment. */
export interface SettingsSource<Flags> {
  readonly flags: Flags;
  readonly env: EnvConfig;
}

/**
 * One group of settings, shared by the processes that compose it (e.g. database and queue: `api` and `worker`).
 * Its field names are unique across the groups of a process: the composed schema is one flat `z.object`.
 */
export interface SettingsGroup<Shape extends z.ZodRawShape, Flags> {
  /** The group's zod fields; each one's messages name its flag or variable and what to write. */
  readonly fields: Shape;
  /** The raw value of each field: its flag, else its environment variable, else its default. */
  readonly read: (flags: Flags, env: EnvConfig) => { [K in keyof Shape]: unknown };
  /**
   * A rule across fields (its own, or another group's, seen untyped): it adds one issue per problem. Like zod's
   * `superRefine`, it runs only once every field parsed, unless `checkAlways` (it then sees unparsed values).
   */
  readonly check?: (
    settings: z.output<z.ZodObject<Shape>> & Readonly<Record<string, unknown>>,
    ctx: z.RefinementCtx,
    source: SettingsSource<Flags>,
  ) => void;
  readonly checkAlways?: boolean;
}

/** Names a group's shape and flags for inference: `settingsGroup({ fields, read(flags: F, env) { … } })`. */
export function settingsGroup<Shape extends z.ZodRawShape, Flags>(
  group: SettingsGroup<Shape, Flags>,
): SettingsGroup<Shape, Flags> {
  return group;
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- any group: Flags is contravariant in `read`
type AnyGroup = SettingsGroup<any, any>;
type UnionToIntersection<U> = (U extends unknown ? (u: U) => void : never) extends (i: infer I) => void
  ? I
  : never;

/** The resolved settings of a list of groups: every group's fields, parsed. */
export type SettingsOf<Groups extends readonly AnyGroup[]> = Readonly<
  UnionToIntersection<{ [I in keyof Groups]: z.output<z.ZodObject<Groups[I]['fields']>> }[number]>
>;

/** The flags a list of groups reads: every group's flags. */
export type FlagsOf<Groups extends readonly AnyGroup[]> = UnionToIntersection<
  { [I in keyof Groups]: Parameters<Groups[I]['read']>[0] }[number]
>;

/** One problem of a configuration: the field (`databaseUrl`, …) and the message that says what to write. */
export interface SettingsProblem {
  readonly field: string;
  readonly message: string;
}

/** Options of {@link parseSettings}. */
export interface ParseSettingsOptions {
  /**
   * The error thrown for the problems (all of them, in field order), `message` being
   * `agentloom <command>: problem; problem…`. Default: {@link configError}.
   */
  invalid?: (message: string, problems: readonly SettingsProblem[]) => Error;
}

/** The default error of {@link parseSettings}: CONFIG (exit 1), with the problems' fields in `details.fields`. */
export function configError(message: string, problems: readonly SettingsProblem[]): AgentloomError {
  return new AgentloomError('CONFIG', message, { details: { fields: problems.map((p) => p.field) } });
}

/**
 * Parses `groups` from flags and environment with one zod object (their fields in order, then their checks) into a
 * frozen object; throws listing every problem at once (see {@link ParseSettingsOptions.invalid}).
 */
export function parseSettings<const Groups extends readonly AnyGroup[]>(
  command: string,
  groups: Groups,
  source: SettingsSource<FlagsOf<Groups>>,
  options: ParseSettingsOptions = {},
): SettingsOf<Groups> {
  const shape: Record<string, z.ZodRawShape[string]> = {};
  for (const [field, type] of groups.flatMap((g) => Object.entries(g.fields as z.ZodRawShape))) {
    // A programming error, not the user's: one field would silently replace the other.
    if (field in shape) throw new Error(`settings of agentloom ${command}: two groups define "${field}"`);
    shape[field] = type;
  }
  let schema: z.ZodType = z.object(shape);
  for (const group of groups) {
    const { check } = group;
    if (check === undefined) continue;
    schema = schema.superRefine(
      (settings, ctx) => check(settings as never, ctx, source),
      group.checkAlways ? { when: () => true } : undefined,
    );
  }
  const input = Object.assign({}, ...groups.map((g) => g.read(source.flags, source.env)));
  const parsed = schema.safeParse(input);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => ({ field: i.path.join('.'), message: i.message }));
    const message = `agentloom ${command}: ${problems.map((p) => p.message).join('; ')}`;
    throw (options.invalid ?? configError)(message, problems);
  }
  return Object.freeze(parsed.data) as SettingsOf<Groups>;
}

/**
 * A port setting (0: any free port), its errors naming `label` (`--port / PORT`) and what to write; `example` is
 * appended to the first one (e.g. `, e.g. --port 8080 (0: any free port)`). One schema for every process's ports.
 */
export function portField(
  label: string,
  options: { noun?: string; example?: string } = {},
): z.ZodCoercedNumber<unknown> {
  const range = `${label} must be between 0 and 65535`;
  return z.coerce
    .number({ error: `${label} must be a ${options.noun ?? 'number'}${options.example ?? ''}` })
    .int(`${label} must be a whole number`)
    .min(0, range)
    .max(65535, range);
}
