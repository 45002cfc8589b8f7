/**
 * Prometheus metrics of an API server (`GET /metrics`, ARCHITECTURE.md "Observability"). What the database knows is
 * read at scrape time (invocations by status, pending calls), so every API process reports the same cluster-wide
 * numbers; what this process sees (HTTP requests, enqueues, event streams) is counted as it happens.
 */
import type { Logger } from 'pino';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { Db } from '../../store/db/database.js';
import { countInvocations, countPendingCalls } from '../../store/repos/queries.js';
import { PENDING_KINDS } from '../../engine/runs/views.js';
import { INVOCATION_STATUSES } from './schemas.js';

/** What one scrape reads from the database. */
interface DatabaseCounts {
  invocations: Awaited<ReturnType<typeof countInvocations>>;
  pending: Awaited<ReturnType<typeof countPendingCalls>>;
}

/** Options of {@link ApiMetrics}. */
export interface ApiMetricsOptions {
  db: Db;
  /** The apps this server serves: each gets a series per status even at zero. */
  apps: readonly string[];
  logger: Logger;
  /** Include Node.js process metrics (CPU, memory, event loop lag). Default true. */
  processMetrics?: boolean;
  /** Registries served with this one (metrics of the same process kept elsewhere). */
  include?: readonly Registry[];
}

/** The metrics of one API server, in a registry of its own (several servers may share a process). */
export class ApiMetrics {
  /** The API's own metrics. */
  private readonly own = new Registry();
  /** What `/metrics` serves: the API's metrics and any included registry. */
  readonly registry: Registry;
  readonly httpRequests: Counter<'method' | 'route' | 'status'>;
  readonly httpDuration: Histogram<'method' | 'route' | 'status'>;
  readonly enqueued: Counter<'app'>;
  readonly answers: Counter<'outcome'>;
  readonly openStreams: Gauge;

  constructor(options: ApiMetricsOptions) {
    const registers = [this.own];
    const { db, apps, logger } = options;
    this.httpRequests = new Counter({
      name: 'agentloom_http_requests_total',
      help: 'HTTP requests answered, by method, route pattern and status code',
      labelNames: ['method', 'route', 'status'],
      registers,
    });
    this.httpDuration = new Histogram({
      name: 'agentloom_http_request_duration_seconds',
      help: 'Time to answer an HTTP request (event streams excluded), in seconds',
      labelNames: ['method', 'route', 'status'],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
      registers,
    });
    this.enqueued = new Counter({
      name: 'agentloom_invocations_enqueued_total',
      help: 'Invocations enqueued through this API server, by app',
      labelNames: ['app'],
      registers,
    });
    this.answers = new Counter({
      name: 'agentloom_answers_total',
      help: 'Answers to paused calls received by this API server: answered, noop (same answer again), conflict',
      labelNames: ['outcome'],
      registers,
    });
    this.openStreams = new Gauge({
      name: 'agentloom_event_streams',
      help: 'Event streams (SSE) open on this API server',
      registers,
    });
    // Read at scrape time, once per scrape: the registry collects every metric at once, so the three gauges
    // share one read. A database that does not answer leaves the series out and says so in databaseUp.
    let reading: Promise<DatabaseCounts | undefined> | undefined;
    const read = (): Promise<DatabaseCounts | undefined> =>
      (reading ??= Promise.all([countInvocations(db), countPendingCalls(db)])
        .then(([invocations, pending]) => ({ invocations, pending }))
        .catch((err: unknown) => {
          logger.warn({ err }, 'metrics could not read the database');
          return undefined;
        })
        .finally(() => (reading = undefined)));
    new Gauge({
      name: 'agentloom_metrics_database_up',
      help: '1 when this scrape could read the database-backed metrics, else 0',
      registers,
      async collect() {
        this.set((await read()) ? 1 : 0);
      },
    });
    new Gauge({
      name: 'agentloom_invocations',
      help: 'Invocations in the database, by app and status',
      labelNames: ['app', 'status'],
      registers,
      async collect() {
        this.reset();
        const rows = (await read())?.invocations;
        if (!rows) return;
        for (const app of new Set([...apps, ...rows.map((r) => r.app)])) {
          for (const status of INVOCATION_STATUSES) this.set({ app, status }, 0);
        }
        for (const row of rows) this.set({ app: row.app, status: row.status }, row.count);
      },
    });
    new Gauge({
      name: 'agentloom_pending_calls',
      help: 'Paused calls waiting for an answer, by app and kind (confirmation, long_running, in_doubt)',
      labelNames: ['app', 'kind'],
      registers,
      async collect() {
        this.reset();
        const rows = (await read())?.pending;
        if (!rows) return;
        for (const app of new Set([...apps, ...rows.map((r) => r.app)])) {
          for (const kind of PENDING_KINDS) this.set({ app, kind }, 0);
        }
        for (const row of rows) this.set({ app: row.app, kind: row.kind }, row.count);
      },
    });
    if (options.processMetrics ?? true) collectDefaultMetrics({ register: this.own, prefix: 'agentloom_' });
    this.registry = options.include?.length ? Registry.merge([this.own, ...options.include]) : this.own;
  }

  /** Counts one answered HTTP request. `route` is the route pattern (`unmatched` for unknown routes). */
  observeRequest(labels: { method: string; route: string; status: number }, seconds: number): void {
    const l = { method: labels.method, route: labels.route, status: String(labels.status) };
    this.httpRequests.inc(l);
    this.httpDuration.observe(l, seconds);
  }
}
