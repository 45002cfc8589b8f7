/**
 * The ledger audits of the distributed e2e suite: what the fixture's tools and models recorded (test/e2e/fixtures/
 * ledger.ts) against what the engine stored — tool calls executed once per stored response, model calls
 * against model events and takeovers — a step's lease, and the marks the fixture sets at moments of a call.
 */
import type pg from 'pg';
import { waitFor } from '../assert/wait-for.js';

/** A step's node row: its fencing attempt and the pid in its lease owner (`host:pid:random`). */
export interface NodeLease {
  path: string;
  attempt: number;
  status: string;
  owner: string | null;
  pid: number | undefined;
}

/** The node of `agent` (an agent that runs once per invocation) in an invocation. */
export async function nodeLease(
  db: pg.Pool,
  invocationId: string,
  agent: string,
): Promise<NodeLease | undefined> {
  const { rows } = await db.query<{
    path: string;
    attempt: number;
    status: string;
    lease_owner: string | null;
  }>('SELECT path, attempt, status, lease_owner FROM nodes WHERE invocation_id = $1 AND agent = $2', [
    invocationId,
    agent,
  ]);
  const row = rows[0];
  if (!row) return undefined;
  const pid = row.lease_owner ? Number(row.lease_owner.split(':')[1]) : undefined;
  return { path: row.path, attempt: row.attempt, status: row.status, owner: row.lease_owner, pid };
}

/** What the fixture ledger says about the tool calls of some invocations, against the stored responses. */
export interface ToolAudit {
  /** Stored function responses (one per call id, unless duplicated). */
  storedResponses: number;
  /** Call keys with more than one stored response. */
  duplicatedResponses: string[];
  /** Distinct idempotency keys in the ledger. */
  keys: number;
  /** Executions counted by the ledger (≥ keys: re-runs of interrupted calls). */
  executions: number;
  keysWithoutResponse: string[];
  responsesWithoutKey: string[];
  /** Keys whose effect was applied more than once (more than one ledger row: the ledger lost its dedupe). */
  doubleEffects: string[];
  /** Executions that started after their call's response was stored: a stored call executed again. */
  executionsAfterStored: { key: string; startedMs: number; storedMs: number }[];
}

/** Compares the ledger's keys with the function responses stored for `invocationIds` (engine database). */
export async function auditToolCalls(
  engineDb: pg.Pool,
  ledgerDb: pg.Pool,
  invocationIds: string[],
): Promise<ToolAudit> {
  const stored = await engineDb.query<{ key: string; n: number; stored_ms: string }>(
    `SELECT e.invocation_id || ':' || (p -> 'functionResponse' ->> 'id') AS key, count(*)::int AS n,
            (extract(epoch FROM min(e.created_at)) * 1000)::bigint AS stored_ms
       FROM events e, jsonb_array_elements(e.content -> 'parts') p
      WHERE e.invocation_id = ANY($1) AND p ? 'functionResponse'
      GROUP BY 1`,
    [invocationIds],
  );
  const ledger = await ledgerDb.query<{ key: string; executions: number; rows: number }>(
    `SELECT key, sum(executions)::int AS executions, count(*)::int AS rows FROM e2e_tool_ledger
      WHERE split_part(key, ':', 1) = ANY($1) GROUP BY key`,
    [invocationIds],
  );
  const runs = await ledgerDb.query<{ key: string; started_ms: string }>(
    "SELECT key, started_ms FROM e2e_tool_runs WHERE split_part(key, ':', 1) = ANY($1)",
    [invocationIds],
  );
  const storedByKey = new Map(stored.rows.map((r) => [r.key, r]));
  const ledgerKeys = new Set(ledger.rows.map((r) => r.key));
  return {
    storedResponses: stored.rows.length,
    duplicatedResponses: stored.rows.filter((r) => r.n > 1).map((r) => r.key),
    keys: ledgerKeys.size,
    executions: ledger.rows.reduce((sum, r) => sum + r.executions, 0),
    doubleEffects: ledger.rows.filter((r) => r.rows > 1).map((r) => r.key),
    keysWithoutResponse: [...ledgerKeys].filter((k) => !storedByKey.has(k)),
    responsesWithoutKey: [...storedByKey.keys()].filter((k) => !ledgerKeys.has(k)),
    executionsAfterStored: runs.rows.flatMap((r) => {
      const s = storedByKey.get(r.key);
      return s && Number(r.started_ms) > Number(s.stored_ms)
        ? [{ key: r.key, startedMs: Number(r.started_ms), storedMs: Number(s.stored_ms) }]
        : [];
    }),
  };
}

/** Model calls made (fixture ledger) against model events stored and takeovers, per invocation and agent. */
export interface ModelAudit {
  calls: number;
  modelEvents: number;
  /** Σ (attempt − 1) over the leaf nodes: how many times a step was claimed again. */
  reclaims: number;
  /** Groups where calls − events exceeds the reclaims of that agent's nodes (a stored call made again). */
  violations: { run: string; agent: string; calls: number; events: number; reclaims: number }[];
}

/**
 * Audits model calls of the runs (run tag → invocation id). Model events are the stored model-role events but
 * the engine's own `adk_request_confirmation` calls (which no model made).
 */
export async function auditModelCalls(
  engineDb: pg.Pool,
  ledgerDb: pg.Pool,
  runs: Map<string, string>,
): Promise<ModelAudit> {
  const ids = [...runs.values()];
  const calls = await ledgerDb.query<{ run: string; agent: string; n: number }>(
    'SELECT run, agent, count(*)::int AS n FROM e2e_model_calls WHERE run = ANY($1) GROUP BY 1, 2',
    [[...runs.keys()]],
  );
  const events = await engineDb.query<{ invocation_id: string; author: string; n: number }>(
    `SELECT invocation_id, author, count(*)::int AS n FROM events
      WHERE invocation_id = ANY($1) AND content ->> 'role' = 'model'
        AND NOT content @> '{"parts": [{"functionCall": {"name": "adk_request_confirmation"}}]}' GROUP BY 1, 2`,
    [ids],
  );
  const nodes = await engineDb.query<{ invocation_id: string; agent: string; reclaims: number }>(
    `SELECT invocation_id, agent, sum(greatest(attempt - 1, 0))::int AS reclaims FROM nodes
      WHERE invocation_id = ANY($1) GROUP BY 1, 2`,
    [ids],
  );
  const eventsOf = new Map(events.rows.map((r) => [`${r.invocation_id}/${r.author}`, r.n]));
  const reclaimsOf = new Map(nodes.rows.map((r) => [`${r.invocation_id}/${r.agent}`, r.reclaims]));
  const violations: ModelAudit['violations'] = [];
  for (const row of calls.rows) {
    const id = `${runs.get(row.run)}/${row.agent}`;
    const stored = eventsOf.get(id) ?? 0;
    const reclaims = reclaimsOf.get(id) ?? 0;
    if (row.n - stored > reclaims || row.n < stored) {
      violations.push({ run: row.run, agent: row.agent, calls: row.n, events: stored, reclaims });
    }
  }
  return {
    calls: calls.rows.reduce((s, r) => s + r.n, 0),
    modelEvents: events.rows.reduce((s, r) => s + r.n, 0),
    reclaims: nodes.rows.reduce((s, r) => s + r.reclaims, 0),
    violations,
  };
}

/** A moment the fixture marked (tool started, signal fired…) for the calls of one invocation. */
export interface Mark {
  key: string;
  pid: number;
  atMs: number;
}

/** The marks `name` of an invocation's calls, oldest first. */
export async function marksOf(ledger: pg.Pool, name: string, invocationId: string): Promise<Mark[]> {
  const { rows } = await ledger.query<{ key: string; pid: number; at_ms: string }>(
    "SELECT key, pid, at_ms FROM e2e_marks WHERE name = $1 AND split_part(key, ':', 1) = $2 ORDER BY id",
    [name, invocationId],
  );
  return rows.map((r) => ({ key: r.key, pid: r.pid, atMs: Number(r.at_ms) }));
}

/** Waits until an invocation's calls have at least `count` marks `name`; returns them. */
export async function waitForMarks(
  ledger: pg.Pool,
  name: string,
  invocationId: string,
  { count = 1, timeoutMs = 30_000 } = {},
): Promise<Mark[]> {
  return waitFor(
    async () => {
      const found = await marksOf(ledger, name, invocationId);
      return found.length >= count ? found : undefined;
    },
    { timeoutMs, intervalMs: 20, what: `${count} "${name}" mark(s) of ${invocationId}` },
  );
}
