/**
 * The requests of the HTTP API fuzz (test/integration/api-fuzz.test.ts), each invalid by construction and drawn
 * from a seeded PRNG, so every run sends the same: enqueue bodies, answers to pending calls, paths, query strings
 * and headers, and raw bytes no HTTP client would send.
 */
export const SEED = 0x5eed_a11;
export const KEY = 'fuzz-key-0123456789abcdef';
export const AUTH = { authorization: `Bearer ${KEY}` };

/** mulberry32: a small seeded PRNG, so every run sends the same requests. */
export function prng(seed: number) {
  let a = seed >>> 0;
  const next = (): number => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (n: number) => Math.floor(next() * n);
  const pick = <T>(items: readonly T[]): T => items[int(items.length)] as T;
  const text = (max: number, alphabet = 'abcXYZ019 -_.~!$&\'()*+,;=:@/?#[]{}"\\<>|^`%') =>
    Array.from({ length: int(max) + 1 }, () => alphabet[int(alphabet.length)]).join('');
  return { next, int, pick, text };
}

export interface FuzzCase {
  what: string;
  method: string;
  path: string;
  headers?: Record<string, string>;
  body?: string | Buffer;
}

/** A JSON value that is never a valid `userId` / `input` / … (wrong type, empty, control characters, …). */
function badValues(r: ReturnType<typeof prng>): unknown[] {
  return [
    null,
    true,
    r.int(1000),
    -1,
    1.5,
    [],
    [r.text(5)],
    {},
    { parts: 'x' },
    '',
    `a\u0000b`,
    'x'.repeat(300),
    `\ud800${r.text(3)}`,
    `tab\there`,
  ];
}

function nested(depth: number): unknown {
  let value: unknown = 'leaf';
  for (let i = 0; i < depth; i++) value = { k: value };
  return value;
}

/** Enqueue bodies that are each invalid by construction. */
export function enqueueCases(r: ReturnType<typeof prng>, count: number): FuzzCase[] {
  const valid = () => ({ userId: 'u', input: 'hello' }) as Record<string, unknown>;
  const mutations: ((b: Record<string, unknown>) => string)[] = [
    (b) => JSON.stringify({ ...b, userId: r.pick(badValues(r)) }),
    (b) =>
      JSON.stringify({
        ...b,
        input: r.pick([
          null,
          3,
          true,
          [],
          { role: 'user' },
          { parts: 'x' },
          { role: 'robot', parts: [] },
          'a\u0000',
        ]),
      }),
    (b) => JSON.stringify({ ...b, maxLlmCalls: r.pick([0, -3, 1.5, '10', 1e10, null, [], {}]) }),
    (b) =>
      JSON.stringify({
        ...b,
        stateDelta: r.pick([[], 'x', 3, null, { ['k\u0000']: 1 }, { k: '\udc00' }, nested(80)]),
      }),
    (b) => JSON.stringify({ ...b, sessionId: r.pick(['', 'a\u0001', 'x'.repeat(400), 5, {}]) }),
    (b) => JSON.stringify({ ...b, idempotencyKey: r.pick(['', 7, 'z'.repeat(500), ['k']]) }),
    (b) => JSON.stringify({ ...b, [`extra_${r.text(4, 'abc')}`]: r.text(5) }),
    (b) => {
      const copy = { ...b };
      delete copy[r.pick(['userId', 'input'])];
      return JSON.stringify(copy);
    },
    (b) => JSON.stringify(r.pick([[b], 'text', 42, null, true, []])),
    (b) => {
      const text = JSON.stringify(b);
      return text.slice(0, r.int(text.length - 1));
    },
    () => r.text(40),
    () => '{"__proto__": {"polluted": true}, "userId": "u", "input": "x"}',
    () => '{"constructor": {"prototype": {"polluted": true}}, "userId": "u", "input": "x"}',
    () => `{"userId": "u", "input": "x", "stateDelta": ${'['.repeat(200)}${']'.repeat(200)}}`,
  ];
  return Array.from({ length: count }, (_, i) => {
    const body = r.pick(mutations)(valid());
    return {
      what: `enqueue body #${i}: ${body.slice(0, 80)}`,
      method: 'POST',
      path: '/v1/apps/echo/invocations',
      headers: { ...AUTH, 'content-type': 'application/json' },
      body,
    };
  });
}

/** A JSON POST with the fuzz key. */
function post(what: string, path: string, body: unknown): FuzzCase {
  const headers = { ...AUTH, 'content-type': 'application/json' };
  return { what, method: 'POST', path, headers, body: JSON.stringify(body) };
}

/** Answers and retries that are each refused (bad shape, unknown call, different answer, wrong state). */
export function answerCases(
  r: ReturnType<typeof prng>,
  count: number,
  ids: { paused: string; answered: string; call: string; answeredCall: string },
): FuzzCase[] {
  const answer = (response: unknown) => ({ id: ids.call, response });
  const badResponses = [
    {},
    { functionResponses: [] },
    { functionResponses: {} },
    { functionResponses: [{ id: '', response: {} }] },
    { functionResponses: [answer('yes')] },
    { functionResponses: [answer([])] },
    { functionResponses: [{ id: ids.call }] },
    { functionResponses: [answer({ confirmed: 'yes' })] },
    { functionResponses: [answer({ confirmed: true }), answer({ confirmed: true })] },
    { functionResponses: [{ ...answer({ confirmed: true }), extra: 1 }] },
    { functionResponses: Array.from({ length: 101 }, (_, k) => ({ id: `c${k}`, response: {} })) },
  ];
  const badConfirmations = [
    {},
    { confirmed: 'true' },
    { confirmed: 1 },
    { confirmed: null },
    [true],
    { payload: 'x' },
  ];
  const responses = `/v1/invocations/${ids.paused}/responses`;
  const make: (() => FuzzCase)[] = [
    () => post('responses: bad shape', responses, r.pick(badResponses)),
    () =>
      post('responses: unknown call', responses, {
        functionResponses: [{ id: `call_${r.text(8, 'abcdef0123')}`, response: { confirmed: true } }],
      }),
    () =>
      post(
        'confirmation: bad body',
        `/v1/invocations/${ids.paused}/confirmations/${ids.call}`,
        r.pick([...badConfirmations, { confirmed: true, extra: 1 }]),
      ),
    () =>
      post(
        'confirmation: a different answer to an answered call',
        `/v1/invocations/${ids.answered}/confirmations/${ids.answeredCall}`,
        { confirmed: false, payload: r.text(5) },
      ),
    () =>
      post(
        'retry of a paused run, or a bad retry body',
        `/v1/invocations/${ids.paused}/retry`,
        r.pick([{ maxLlmCalls: 0 }, { maxLlmCalls: 'x' }, { other: 1 }, [], {}]),
      ),
  ];
  return Array.from({ length: count }, () => r.pick(make)());
}

/** Paths that match no route, or a route with an id that does not exist / cannot exist. */
export function pathCases(r: ReturnType<typeof prng>, count: number): FuzzCase[] {
  const encoded = () =>
    Array.from({ length: r.int(6) + 1 }, () => `%${r.int(256).toString(16).padStart(2, '0')}`).join('');
  const segment = () =>
    r.pick([
      r.text(12, 'abcdefXYZ0123456789-_.~'),
      encoded(),
      '%zz',
      '%',
      '..',
      '.',
      '%2e%2e',
      'x'.repeat(r.int(600) + 1),
      '%00',
      '%c0%af',
      '%ed%a0%80',
    ]);
  const shapes = [
    () => `/v1/invocations/${segment()}`,
    () => `/v1/invocations/${segment()}/events`,
    () => `/v1/invocations/${segment()}/nodes`,
    () => `/v1/sessions/${segment()}`,
    () => `/v1/apps/${segment()}`,
    () => `/v1/${segment()}/${segment()}`,
    () => `/${segment()}`,
    () => `//v1//apps//`,
    () => `/v1/apps/echo/invocations/${segment()}`,
    () => `/v1/invocations/inv_${segment()}/${segment()}`,
  ];
  return Array.from({ length: count }, () => {
    const path = r.pick(shapes)();
    const method = r.pick(['GET', 'GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS']);
    return {
      what: `path ${method} ${path.slice(0, 100)}`,
      method,
      path,
      headers: method === 'POST' ? { ...AUTH, 'content-type': 'application/json' } : AUTH,
      ...(method === 'POST' ? { body: '{}' } : {}),
    };
  });
}

/** Query strings with at least one unknown key or invalid value. */
export function queryCases(r: ReturnType<typeof prng>, count: number, id: string): FuzzCase[] {
  const bad = [
    () => `limit=${r.pick(['0', '-1', '201', 'abc', '1.5', '', '1e3', '99999999999999999'])}`,
    () => `status=${r.pick(['done', 'COMPLETED', '', 'running,paused', '%00'])}`,
    () => `app=${r.pick(['', 'a%20b', '%2F', 'x'.repeat(200), '..'])}`,
    () => `userId=${r.pick(['', '%00', '%01x', 'x'.repeat(300)])}`,
    () =>
      `cursor=${r.pick(['', 'x', 'eyJ0IjoiMjAyNi0xMy0wMVQwMDowMDowMC4wMDAwMDBaIiwiaSI6IngifQ', 'e30', '%ff%fe', 'x'.repeat(600)])}`,
    () => `${r.text(6, 'abcxyz')}=${encodeURIComponent(r.text(6))}`,
    () => `limit=1&limit=2`,
    () => `app[]=echo`,
    () => `app[x]=1`,
  ];
  const badEvents = [
    () => `after=${r.pick(['-1', 'x', '1.5', '', '1e9', '9999999999999999'])}`,
    () => `limit=${r.pick(['0', '10001', 'x'])}`,
    () => `stay=${r.pick(['yes', '2', ''])}`,
    () => `partial=${r.pick(['no', 'TRUE', ''])}`,
    () => `${r.text(5, 'qwerty')}=1`,
  ];
  return Array.from({ length: count }, () => {
    const events = r.next() < 0.4;
    const parts = [r.pick(events ? badEvents : bad)()];
    if (r.next() < 0.5) parts.push(events ? 'after=1' : 'limit=5');
    const path = `${events ? `/v1/invocations/${id}/events` : '/v1/invocations'}?${parts.join('&')}`;
    return { what: `query ${path}`, method: 'GET', path, headers: AUTH };
  });
}

/** Headers that make a request unauthorised, unsupported or invalid. */
export function headerCases(r: ReturnType<typeof prng>, count: number, id: string): FuzzCase[] {
  const latin = 'abcXYZ019 -_.~!$&\'()*+,;=:@/?#[]{}"\\<>|^`%\u00e9\u00ff\t';
  const make: (() => FuzzCase)[] = [
    () => ({
      what: 'bad authorization',
      method: 'GET',
      path: r.pick(['/v1/apps', `/v1/invocations/${id}`, '/v1/invocations', '/metrics']),
      headers: {
        authorization: r.pick([
          `Bearer ${r.text(30, latin)}`,
          `Basic ${r.text(20)}`,
          r.text(40, latin),
          `Bearer ${KEY}x`,
          `Bearer ${KEY.slice(0, -1)}`,
          `Bearer  ${KEY} ${KEY}`,
          `Bearer ${'k'.repeat(4000)}`,
        ]),
      },
    }),
    () => ({
      what: 'bad Last-Event-ID on a stream',
      method: 'GET',
      path: `/v1/invocations/${id}/events`,
      headers: {
        ...AUTH,
        accept: 'text/event-stream',
        'last-event-id': r.pick(['x', '-1', '1.5', r.text(10, latin), '1e3', '99999999999999999']),
      },
    }),
    () => ({
      what: 'unsupported content type',
      method: 'POST',
      path: '/v1/apps/echo/invocations',
      headers: {
        ...AUTH,
        'content-type': r.pick([
          'application/xml',
          'multipart/form-data; boundary=x',
          `x-${r.text(8, 'abc')}/${r.text(5, 'xyz')}`,
          'application/x-www-form-urlencoded',
          'image/png',
        ]),
      },
      body: r.pick(['userId=u&input=x', '<a/>', r.text(30), '{"userId":"u","input":"x"}']),
    }),
    () => ({
      ...post('text/plain body', '/v1/apps/echo/invocations', undefined),
      headers: { ...AUTH, 'content-type': 'text/plain' },
      body: r.pick(['{"userId":"u","input":"x"}', r.text(30)]),
    }),
    () =>
      post('a body over 1 MiB', r.pick(['/v1/apps/echo/invocations', `/v1/invocations/${id}/responses`]), {
        userId: 'u',
        input: 'y'.repeat(1024 * 1024 + r.int(1000)),
      }),
  ];
  return Array.from({ length: count }, () => r.pick(make)());
}

/** Raw bytes no HTTP client would send. */
export const RAW_REQUESTS: string[] = [
  'GARBAGE\r\n\r\n',
  'GET /v1/apps HTTP/9.9\r\nHost: x\r\n\r\n',
  'GET /v1/apps HTTP/1.1\r\nHost: x\r\nBad Header Name: y\r\n\r\n',
  'GET /v1/apps HTTP/1.1\r\nHost: x\r\nNoColonHere\r\n\r\n',
  `GET /v1/apps HTTP/1.1\r\nHost: x\r\nX-Big: ${'h'.repeat(20_000)}\r\n\r\n`,
  'POST /v1/apps/echo/invocations HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n{}',
  'POST /v1/apps/echo/invocations HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n',
  'POST /v1/apps/echo/invocations HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n',
  'GET /v1/apps HTTP/1.1\r\nHost: x\r\nX-Nul: a\u0000b\r\n\r\n',
  'GET /v1/ap ps HTTP/1.1\r\nHost: x\r\n\r\n',
  'GET \u0001/v1/apps HTTP/1.1\r\nHost: x\r\n\r\n',
  `GET /${'a'.repeat(70_000)} HTTP/1.1\r\nHost: x\r\n\r\n`,
  'GET /v1/apps HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n',
  'GET /v1/apps HTTP/1.1\r\n Folded: header\r\nHost: x\r\n\r\n',
  `POST /v1/apps/echo/invocations HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${KEY}\r\nContent-Type: application/json\r\nContent-Length: 5\r\n\r\n{"a":1}GARBAGE\r\n\r\n`,
  'BREW /v1/apps HTCPCP/1.0\r\n\r\n',
  '\r\n\r\n\r\n',
  'GET /v1/apps HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \u00ff\u00fe\r\n\r\n',
  'GET /v1/apps?x=%zz HTTP/1.1\r\nHost: x\r\n\r\n',
  'GET http://evil.example/v1/apps HTTP/1.1\r\nHost: x\r\n\r\n',
];
