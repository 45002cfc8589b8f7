/**
 * Operations routes: `/metrics` is valid Prometheus text exposition (checked by a small parser of the format) and
 * its counters and gauges move when runs happen; `/openapi.json` is a valid OpenAPI 3.1 document listing every
 * route with its schemas; `/healthz` and `/readyz` answer, and `/readyz` says 503 in the error shape when the
 * database and queue are gone.
 */
import { describe, expect, it } from 'vitest';
import { createApiServer } from '../../src/api/index.js';
import { scripted } from '../fixtures/agents.js';
import { echoConfirmApps } from '../fixtures/apps/echo-confirm-apps.js';
import { serveEngine } from '../support/services/api-servers.js';
import { backends, engineOn } from '../support/services/engines.js';
import { parseExposition, value, type Family } from '../support/assert/prometheus-text.js';
import { apiClient } from '../support/client/http-client.js';

describe('operations routes', () => {
  const api = serveEngine(() => engineOn(backends[1]!, { apps: echoConfirmApps() }));
  const http = apiClient({ base: () => api.base });
  const get = (path: string) => http('GET', path);
  const post = (path: string, body: unknown) => http('POST', path, body);
  const scrape = async () => {
    const r = await get('/metrics');
    expect(r.status).toBe(200);
    expect(r.type).toMatch(/^text\/plain; version=0\.0\.4/);
    return parseExposition(r.text);
  };

  it('exposes valid Prometheus text whose counters and gauges move when runs happen', async () => {
    const before = await scrape();
    expect(before.get('agentloom_invocations')?.type).toBe('gauge');
    expect(before.get('agentloom_http_request_duration_seconds')?.type).toBe('histogram');
    expect(before.has('agentloom_process_cpu_user_seconds_total')).toBe(true);
    expect(value(before, 'agentloom_metrics_database_up')).toBe(1);
    const completed = (f: Map<string, Family>) =>
      value(f, 'agentloom_invocations', { app: 'echo', status: 'completed' });
    const enqueueRoute = { method: 'POST', route: '/v1/apps/:app/invocations', status: '202' };

    for (let i = 0; i < 3; i++) {
      const r = await post('/v1/apps/echo/invocations', { userId: 'm', input: `run ${i}` });
      expect(r.status).toBe(202);
      await api.engine.wait(r.body.invocationId as string, { timeoutMs: 30_000 });
    }
    const paused = await post('/v1/apps/confirm/invocations', { userId: 'm', input: 'publish' });
    const id = paused.body.invocationId as string;
    const view = await api.engine.wait(id, { timeoutMs: 30_000 });

    const during = await scrape();
    expect(completed(during) - completed(before)).toBe(3);
    expect(value(during, 'agentloom_invocations', { app: 'confirm', status: 'paused' })).toBe(1);
    expect(value(during, 'agentloom_pending_calls', { app: 'confirm', kind: 'confirmation' })).toBe(1);
    expect(value(during, 'agentloom_pending_calls', { app: 'echo', kind: 'confirmation' })).toBe(0);
    expect(
      value(during, 'agentloom_invocations_enqueued_total', { app: 'echo' }) -
        value(before, 'agentloom_invocations_enqueued_total', { app: 'echo' }),
    ).toBe(3);
    expect(
      value(during, 'agentloom_http_requests_total', enqueueRoute) -
        value(before, 'agentloom_http_requests_total', enqueueRoute),
    ).toBe(4);
    expect(value(during, 'agentloom_http_request_duration_seconds_count', enqueueRoute)).toBe(4);

    const answered = await post(`/v1/invocations/${id}/confirmations/${view.pending[0]?.callId}`, {
      confirmed: true,
    });
    expect(answered.status).toBe(200);
    await api.engine.wait(id, { timeoutMs: 30_000 });
    await post(`/v1/invocations/${id}/confirmations/${view.pending[0]?.callId}`, { confirmed: true });
    await post(`/v1/invocations/${id}/confirmations/${view.pending[0]?.callId}`, { confirmed: false });
    const after = await scrape();
    expect(value(after, 'agentloom_pending_calls', { app: 'confirm', kind: 'confirmation' })).toBe(0);
    expect(value(after, 'agentloom_invocations', { app: 'confirm', status: 'completed' })).toBe(1);
    expect(value(after, 'agentloom_answers_total', { outcome: 'answered' })).toBe(1);
    expect(value(after, 'agentloom_answers_total', { outcome: 'noop' })).toBe(1);
    expect(value(after, 'agentloom_answers_total', { outcome: 'conflict' })).toBe(1);
    expect(
      value(after, 'agentloom_http_requests_total', { route: '/metrics', status: '200' }),
    ).toBeGreaterThanOrEqual(2);
  });

  it('rejects malformed exposition in its own parser (the parser checks what it claims)', () => {
    const bad = [
      'no_type_line 1\n',
      '# TYPE x counter\nx{a="1",a="2"} 1\n',
      '# TYPE x counter\nx{a=1} 1\n',
      '# TYPE x counter\nx one\n',
      '# TYPE x counter\nx 1\nx 2\n',
      '# TYPE x foo\nx 1\n',
      '# TYPE h histogram\nh_bucket{le="1"} 5\nh_bucket{le="+Inf"} 3\nh_count 3\nh_sum 1\n',
    ];
    for (const text of bad) expect(() => parseExposition(text), text).toThrow();
  });

  it('serves an OpenAPI 3.1 document with every route, its schemas and resolvable references', async () => {
    const r = await get('/openapi.json');
    expect(r.status).toBe(200);
    const doc = JSON.parse(r.text) as {
      openapi: string;
      security: unknown;
      paths: Record<
        string,
        Record<string, { responses?: Record<string, unknown>; requestBody?: unknown; security?: unknown }>
      >;
      components: { schemas: Record<string, unknown>; securitySchemes: Record<string, unknown> };
    };
    expect(doc.openapi).toBe('3.1.0');
    const routes = Object.entries(doc.paths).flatMap(([path, ops]) =>
      Object.keys(ops).map((method) => `${method.toUpperCase()} ${path}`),
    );
    expect(routes.sort()).toEqual(
      [
        'POST /v1/apps/{app}/invocations',
        'GET /v1/invocations',
        'GET /v1/invocations/{id}',
        'GET /v1/invocations/{id}/events',
        'GET /v1/invocations/{id}/nodes',
        'GET /v1/invocations/{id}/requests',
        'GET /v1/pending',
        'POST /v1/invocations/{id}/responses',
        'POST /v1/invocations/{id}/confirmations/{callId}',
        'POST /v1/invocations/{id}/cancel',
        'POST /v1/invocations/{id}/retry',
        'POST /v1/invocations/{id}/fork',
        'GET /v1/invocations/{id}/forks',
        'POST /v1/invocations/{id}/replay',
        'GET /v1/diff',
        'GET /v1/apps',
        'GET /v1/apps/{app}',
        'GET /v1/sessions/{id}',
        'GET /v1/credentials',
        'DELETE /v1/credentials',
        'GET /v1/auth/callback',
        'GET /healthz',
        'GET /readyz',
        'GET /metrics',
        // ADK's API-server routes (adk-routes.test.ts).
        'GET /version',
        'GET /list-apps',
        'GET /apps/{app}/users/{user}/sessions',
        'POST /apps/{app}/users/{user}/sessions',
        'POST /apps/{app}/users/{user}/sessions/{id}',
        'GET /apps/{app}/users/{user}/sessions/{id}',
        'PATCH /apps/{app}/users/{user}/sessions/{id}',
        'DELETE /apps/{app}/users/{user}/sessions/{id}',
        'POST /run',
        'POST /run_sse',
        'GET /dev/apps/{app}/build_graph',
        'GET /dev/apps/{app}/build_graph_image',
        'GET /dev/apps/{app}/debug/trace/session/{id}',
        // A2A (a2a-server.test.ts).
        'GET /a2a/{app}/.well-known/agent-card.json',
        'GET /a2a/{app}/.well-known/agent.json',
        'GET /api/a2a/{namespace}/{app}/.well-known/agent.json',
        'POST /a2a/{app}',
        'GET /api/a2a/{namespace}/{app}/.well-known/agent-card.json',
        'POST /api/a2a/{namespace}/{app}',
      ].sort(),
    );
    for (const [path, ops] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(ops)) {
        expect(Object.keys(op.responses ?? {}).length, `${method} ${path}`).toBeGreaterThan(0);
        if (method === 'post' && !path.endsWith('/cancel'))
          expect(op.requestBody, `${method} ${path}`).toBeDefined();
      }
    }
    expect(doc.components.securitySchemes.apiKey).toEqual({ type: 'http', scheme: 'bearer' });
    expect(doc.security).toEqual([{ apiKey: [] }]);
    for (const probe of ['/healthz', '/readyz']) expect(doc.paths[probe]?.get?.security).toEqual([]);
    // A2A agent cards are public: a client reads there how to authenticate.
    expect(doc.paths['/a2a/{app}/.well-known/agent-card.json']?.get?.security).toEqual([]);
    const refs = [...r.text.matchAll(/"\$ref":"#\/components\/schemas\/([^"]+)"/g)].map(
      (m) => m[1] as string,
    );
    expect(refs.length).toBeGreaterThan(0);
    for (const ref of refs) expect(doc.components.schemas[ref], ref).toBeDefined();
    const enqueue = JSON.stringify(doc.paths['/v1/apps/{app}/invocations']?.post?.requestBody);
    for (const field of ['userId', 'sessionId', 'input', 'stateDelta', 'maxLlmCalls', 'idempotencyKey']) {
      expect(enqueue).toContain(`"${field}"`);
    }
  });

  it('answers /healthz and /readyz, and /readyz 503 in the error shape once the database and queue are gone', async () => {
    expect(JSON.parse((await get('/healthz')).text)).toEqual({ status: 'ok' });
    expect(JSON.parse((await get('/readyz')).text)).toEqual({
      status: 'ready',
      checks: { database: 'ok', queue: 'ok' },
    });
    const doomed = await engineOn(backends[1]!, { apps: [{ name: 'echo', agent: scripted('e', 'x') }] });
    const probe = await createApiServer({ engine: doomed, processMetrics: false, readyTimeoutMs: 1_000 });
    try {
      await doomed.close();
      const r = await probe.inject({ method: 'GET', url: '/readyz' });
      expect(r.statusCode).toBe(503);
      const body = JSON.parse(r.body) as {
        error: { code: string; details: { checks: Record<string, string> } };
      };
      expect(body.error.code).toBe('UNAVAILABLE');
      expect(body.error.details.checks.database).not.toBe('ok');
      expect(body.error.details.checks.queue).not.toBe('ok');
      expect(r.body).not.toMatch(/\n\s+at /);
      expect((await probe.inject({ method: 'GET', url: '/healthz' })).statusCode).toBe(200);
    } finally {
      await probe.close();
    }
  });
});
