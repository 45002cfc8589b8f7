/**
 * The README's worked OAuth2 example, as a user runs it, in code and in YAML: the example's provider
 * (examples/oauth2/fake-provider.ts) and `agentloom dev --apps examples/oauth2/calendar-app.ts` — or `--apps
 * calendar-app.yaml --registry calendar-tools.ts`, its client secret read from OAUTH_CLIENT_SECRET — as real processes, no AGENTLOOM_SECRET_KEY (dev makes
 * its own) and no AGENTLOOM_PUBLIC_URL (dev's own address is the callback). `run --follow` stops at the pause,
 * `status` shows the authorization URL, the "browser" opens it and is sent back to `/v1/auth/callback`, and the
 * run completes with what the tool read using the token.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort, REPO, runCli, ServerProcess, show } from '../support/processes/cli.js';
import { waitFor } from '../support/assert/wait-for.js';

const dir = mkdtempSync(join(tmpdir(), 'agentloom-oauth2-example-'));
const secret = randomBytes(16).toString('hex');
const servers: ServerProcess[] = [];
afterAll(async () => {
  await Promise.all(servers.map((s) => s.stop('SIGKILL')));
  rmSync(dir, { recursive: true, force: true });
});

/**
 * How dev serves the example: the code app, or the YAML app. The YAML names the provider at its documented address
 * (127.0.0.1:4000), which a test cannot count on: it runs a copy naming this test's provider, nothing else changed.
 */
const VARIANTS = {
  code: (): string[] => ['--apps', 'examples/oauth2/calendar-app.ts'],
  yaml: (providerUrl: string): string[] => {
    const copy = join(dir, 'calendar-app.yaml');
    const yaml = readFileSync(join(REPO, 'examples/oauth2/calendar-app.yaml'), 'utf8');
    expect(yaml).toContain('clientSecret: { valueFrom: { env: OAUTH_CLIENT_SECRET } }');
    writeFileSync(copy, yaml.replaceAll('http://127.0.0.1:4000', providerUrl));
    return ['--apps', copy, '--registry', 'examples/oauth2/calendar-tools.ts'];
  },
};

describe.each(Object.keys(VARIANTS) as (keyof typeof VARIANTS)[])('the OAuth2 example (%s)', (variant) => {
  it('pauses for consent, shows where to consent, and completes once the provider sends the user back', async () => {
    const providerPort = await freePort();
    const provider = new ServerProcess(
      [join(REPO, 'examples/oauth2/fake-provider.ts'), '--port', String(providerPort)],
      { OAUTH_CLIENT_SECRET: secret },
      [process.execPath, '--import', 'tsx'],
    );
    servers.push(provider);
    await provider.waitForOutput(/listening/, { what: 'the provider to listen' });

    const port = await freePort();
    const env = { OAUTH_CLIENT_SECRET: secret, OAUTH_PROVIDER_URL: `http://127.0.0.1:${providerPort}` };
    const dev = new ServerProcess(
      [
        'dev',
        ...VARIANTS[variant](env.OAUTH_PROVIDER_URL),
        '--data',
        join(dir, `data-${variant}`),
        '--port',
        String(port),
      ],
      env,
    );
    servers.push(dev);
    const [, url] = await dev.waitForOutput(/^agentloom dev: listening on (http:\/\/\S+)$/m, {
      timeoutMs: 170_000,
      what: 'dev to listen',
    });

    const run = await runCli([
      'run',
      'calendar',
      "what's on today?",
      '--user',
      'ada',
      '--follow',
      '--url',
      url!,
    ]);
    expect(run.code, show(run)).toBe(3);
    const id = /inv_[0-9a-f-]+/.exec(run.stdout)?.[0] as string;
    const status = await runCli(['status', id, '--url', url!]);
    const authorize = /open to authorize: (\S+)/.exec(status.stdout)?.[1];
    expect(authorize, show(status)).toContain(`http://127.0.0.1:${providerPort}/authorize?`);

    // The browser: the provider consents at once and redirects to dev's callback.
    const consent = await fetch(authorize!, { redirect: 'manual' });
    const callback = consent.headers.get('location') as string;
    expect(callback.startsWith(`http://127.0.0.1:${port}/v1/auth/callback?`)).toBe(true);
    const page = await fetch(callback);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('Authorized');

    const done = await waitFor(
      async () => {
        const view = (await (await fetch(`${url}/v1/invocations/${id}`)).json()) as Record<string, unknown>;
        return view.status === 'completed' ? view : undefined;
      },
      { timeoutMs: 60_000, intervalMs: 100, what: 'the run to complete' },
    );
    expect(done.output).toBe('Today: 09:30 stand-up; 14:00 design review.');

    // Another user answers from the CLI with the callback URL the provider sent them to (a page that could not
    // reach this server, say): `agentloom auth ID CALL --callback-url URL`.
    const second = await runCli([
      'run',
      'calendar',
      'and tomorrow?',
      '--user',
      'bo',
      '--follow',
      '--url',
      url!,
    ]);
    expect(second.code, show(second)).toBe(3);
    const id2 = /inv_[0-9a-f-]+/.exec(second.stdout)?.[0] as string;
    const view = (await (await fetch(`${url}/v1/invocations/${id2}`)).json()) as {
      pending: { callId: string; auth: { authorizationUrl: string } }[];
    };
    const [pending] = view.pending;
    const sentBack = (await fetch(pending!.auth.authorizationUrl, { redirect: 'manual' })).headers.get(
      'location',
    );
    const answered = await runCli(['auth', id2, pending!.callId, '--callback-url', sentBack!, '--url', url!]);
    expect(answered.code, show(answered)).toBe(0);
    const completed = await waitFor(
      async () => {
        const run = (await (await fetch(`${url}/v1/invocations/${id2}`)).json()) as Record<string, unknown>;
        return run.status === 'completed' ? run : undefined;
      },
      { timeoutMs: 60_000, intervalMs: 100, what: `${id2} to complete` },
    );
    expect(completed.output).toBe('Today: 09:30 stand-up; 14:00 design review.');
    expect(dev.output).not.toContain(secret);
    expect(answered.stdout + answered.stderr).not.toContain(new URL(sentBack!).searchParams.get('code'));
  });
});
