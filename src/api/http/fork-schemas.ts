/**
 * Schemas of the fork, replay and diff routes (routes-forks.ts): where a fork starts and what it changes, a
 * replay's first divergence, two runs compared node by node.
 */
import * as z from 'zod';
import { contentSchema } from '../../core/content.js';
import { jsonObject, storableJson, text } from './schemas.js';

export const forkBodySchema = z.strictObject({
  at: text(2048).describe('the node path to run again from, e.g. writer/refine/critic#1'),
  state: jsonObject.optional().describe('a state patch applied when the fork starts'),
  instruction: z
    .record(z.string(), z.string().max(100_000))
    .optional()
    .describe("instructions replacing LlmAgents' own, by agent name"),
  input: z
    .union([z.string().max(1_000_000), contentSchema])
    .superRefine((v, ctx) => storableJson(v, ctx))
    .optional()
    .describe('a new user message replacing the original one'),
  definition: z
    .enum(['recorded', 'current'])
    .optional()
    .describe("'current' forks a run whose app changed since onto the current definition"),
});

export type ForkBody = z.infer<typeof forkBodySchema>;

export const replayBodySchema = z
  .strictObject({
    definition: z
      .enum(['current', 'recorded'])
      .optional()
      .describe("'recorded': refuse when the app's definition changed since the run"),
  })
  .nullish();

export const replayResultSchema = z.object({
  replayId: z.string().describe('the replay run (a fork of the original at its root, on recorded answers)'),
  diverged: z.boolean(),
  nodePath: z.string().optional(),
  expected: z.unknown().optional(),
  actual: z.unknown().optional(),
  message: z.string().optional(),
});
const nodeSideSchema = z
  .object({
    status: z.string(),
    output: z.string().nullable(),
    toolCalls: z.array(z.object({ name: z.string(), args: z.record(z.string(), z.unknown()) })),
    modelCalls: z.number().int(),
    tokens: z.number().nullable(),
    durationMs: z.number(),
  })
  .nullable();

const runEndSchema = z.object({ id: z.string(), status: z.string(), output: z.string().nullable() });

export const diffQuerySchema = z.strictObject({ a: text(256), b: text(256) });

export const diffSchema = z.object({
  a: runEndSchema,
  b: runEndSchema,
  nodes: z.array(z.object({ path: z.string(), a: nodeSideSchema, b: nodeSideSchema, same: z.boolean() })),
  firstDivergence: z.string().nullable(),
});
export type DiffJson = z.infer<typeof diffSchema>;

export type ReplayJson = z.infer<typeof replayResultSchema>;

export const forkResultSchema = z.object({ invocationId: z.string(), sessionId: z.string() });

export const forkListSchema = z.object({
  forks: z.array(
    z.object({ id: z.string(), status: z.string(), at: z.string().nullable(), createdAt: z.string() }),
  ),
});
