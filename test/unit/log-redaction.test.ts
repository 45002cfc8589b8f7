/**
 * pino redaction, the second line of defence behind "secrets are never logged": a record carrying secrets in the
 * fields that hold them (at the top, in nested objects, in arrays, in request headers) is written with none of their
 * values, by a logger with LOG_REDACTION and by `dev`'s terminal logger; and every logger src/ creates uses it.
 */
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { terminalLogger } from '../../src/cli/terminal/terminal-log.js';
import { LOG_REDACTION } from '../../src/core/log-redaction.js';

const planted = (what: string) => `planted-${what}-${randomBytes(6).toString('hex')}`;

/** A record with a secret in every kind of place; returns it and the secrets. */
function secretRecord(): { record: Record<string, unknown>; secrets: string[] } {
  const s = {
    apiKey: planted('api-key'),
    token: planted('token'),
    accessToken: planted('access-token'),
    refreshToken: planted('refresh-token'),
    clientSecret: planted('client-secret'),
    password: planted('password'),
    exchanged: planted('exchanged'),
    callback: `https://app.example/cb?state=s&code=${planted('code')}`,
    header: `Bearer ${planted('header')}`,
    snake: planted('access_token'),
  };
  const record = {
    apiKey: s.apiKey,
    tool: { name: 'weather', auth: { token: s.token } },
    oauth2: { accessToken: s.accessToken, refreshToken: s.refreshToken },
    client: { clientSecret: s.clientSecret },
    user: { password: s.password },
    functionResponses: [
      { id: 'c1', response: { exchangedAuthCredential: { authType: 'apiKey', apiKey: s.exchanged } } },
      { id: 'c2', response: { authResponseUri: s.callback } },
    ],
    req: { method: 'GET', url: '/v1/apps', headers: { authorization: s.header } },
    tokenResponse: { access_token: s.snake, expires_in: 3600 },
  };
  return { record, secrets: Object.values(s) };
}

function captured(): { stream: Writable; text: () => string } {
  let text = '';
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      text += chunk.toString();
      done();
    },
  });
  return { stream, text: () => text };
}

describe('LOG_REDACTION', () => {
  it('keeps every planted secret out of a JSON log line, and the fields that are not secret in it', () => {
    const out = captured();
    const log = pino({ level: 'info', redact: LOG_REDACTION }, out.stream).child({ invocationId: 'inv1' });
    const { record, secrets } = secretRecord();
    log.info(record, 'answer received');
    log.info({ err: Object.assign(new Error('refused'), { details: { token: secrets[1] } }) }, 'failed');
    const text = out.text();
    for (const secret of secrets) expect(text).not.toContain(secret);
    expect(text).toContain('[redacted]');
    // What is not a secret stays readable.
    expect(text).toContain('"invocationId":"inv1"');
    expect(text).toContain('"name":"weather"');
    expect(text).toContain('"url":"/v1/apps"');
    expect(text).toContain('"expires_in":3600');
    // The record logged is not changed.
    expect((record.oauth2 as { accessToken: string }).accessToken).toBe(secrets[2]);
  });

  it("is applied by dev's terminal logger", () => {
    const out = captured();
    const { record, secrets } = secretRecord();
    terminalLogger('info', out.stream).warn(record, 'answer received');
    expect(out.text()).toMatch(/^warn: answer received {2}\{/);
    for (const secret of secrets) expect(out.text()).not.toContain(secret);
  });

  it('is the redact option of every pino logger src/ creates', () => {
    const root = join(import.meta.dirname, '../../src');
    const files = readdirSync(root, { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.ts'));
    const creating = files.filter((f) => /\bpino\(/.test(readFileSync(join(root, f), 'utf8')));
    expect(creating.length).toBeGreaterThanOrEqual(3);
    for (const file of creating) {
      const source = readFileSync(join(root, file), 'utf8');
      const calls = source.match(/\bpino\(/g)?.length ?? 0;
      const redacted = source.match(/redact: LOG_REDACTION/g)?.length ?? 0;
      expect(redacted, `${relative(root, join(root, file))}: a pino(...) without redact: LOG_REDACTION`).toBe(
        calls,
      );
    }
  });
});
