/**
 * Secrets checked by `agentloom validate` as a user runs it, on files whose secrets are wrong — one written in
 * clear, one read from a variable the environment lacks, one whose `valueFrom` has the wrong shape, and a kagent
 * folder with the same mistakes in `headersFrom` — each a line `file:line:col: path: message` naming the fix, exit 1.
 * `--no-env` turns a missing variable (only) into a warning; a process serving the file refuses to start, naming it.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort, ServerProcess } from '../support/processes/cli.js';

const DIR = 'test/fixtures/yaml/secrets';
const data = mkdtempSync(join(tmpdir(), 'agentloom-validate-secrets-'));
afterAll(() => rmSync(data, { recursive: true, force: true }));

function validate(args: string[], env: Record<string, string | undefined> = {}) {
  const result = spawnSync(process.execPath, ['bin/agentloom.js', 'validate', ...args], {
    encoding: 'utf8',
    env: { ...process.env, DATABASE_URL: undefined, ...env },
    timeout: 60_000,
  });
  return { ...result, lines: result.stdout.trim().split('\n') };
}

const MISSING = `${DIR}/missing-variable.yaml:10:48: agents[0].tools[0].mcp.headers.Authorization.valueFrom.env: the environment has no variable AGENTLOOM_TEST_UNSET_MCP_TOKEN (Authorization is read from it): set it`;

describe('agentloom validate: secrets', () => {
  it('refuses a secret written in clear, naming its line and the fix', () => {
    const result = validate([`${DIR}/inline-secret.yaml`]);
    expect(result.stderr).toBe('');
    expect(result.status).toBe(1);
    expect(result.lines).toEqual([
      `${DIR}/inline-secret.yaml:10:58: agents[0].tools[0].auth.rawAuthCredential.apiKey: apiKey is a secret and is never written in the file: write { valueFrom: { env: API_KEY } } and set API_KEY in the environment of every process that serves the app`,
      `1 problem in ${DIR}/inline-secret.yaml`,
    ]);
    expect(result.stdout).not.toContain('sk-live-4f9a8b7c6d5e4f3a2b1c');
  });

  it('refuses a variable the environment lacks; accepts the file once it is set; --no-env warns', () => {
    const path = `${DIR}/missing-variable.yaml`;
    const missing = validate([path], { AGENTLOOM_TEST_UNSET_MCP_TOKEN: undefined });
    expect(missing.status).toBe(1);
    expect(missing.lines).toEqual([MISSING, `1 problem in ${path}`]);
    const set = validate([path], { AGENTLOOM_TEST_UNSET_MCP_TOKEN: 'Bearer from-the-environment' });
    expect(set.status, set.stdout).toBe(0);
    expect(set.lines).toEqual([expect.stringMatching(/^ok: .*missing-variable\.yaml: 1 app: missing /)]);
    const noEnv = validate(['--no-env', path], { AGENTLOOM_TEST_UNSET_MCP_TOKEN: undefined });
    expect(noEnv.status, noEnv.stdout).toBe(0);
    expect(noEnv.lines).toEqual([
      MISSING.replace(':10:48: ', ':10:48: warning: '),
      expect.stringMatching(/^ok: .*missing-variable\.yaml: 1 app: missing /),
    ]);
  });

  it('refuses a valueFrom of the wrong shape: as text, and in kagent Secret form in native YAML', () => {
    const path = `${DIR}/wrong-valuefrom.yaml`;
    const result = validate([path]);
    expect(result.status).toBe(1);
    expect(result.lines).toEqual([
      `${path}:12:72: agents[0].tools[0].auth.rawAuthCredential.http.credentials.token.valueFrom: write valueFrom: { env: TOKEN } (the variable that holds token)`,
      `${path}:16:37: agents[0].tools[1].mcp.headers.X-Api-Key.valueFrom: agentloom YAML reads secrets from environment variables, not Kubernetes Secrets: write valueFrom: { env: MCP_KEY }`,
      `2 problems in ${path}`,
    ]);
  });

  it('holds kagent headersFrom to the same rules: a credential in value, a wrong valueFrom, a missing variable', () => {
    const folder = `${DIR}/kagent`;
    const tenant = `${folder}/agent.yaml:12:78: spec.declarative.tools[0].headersFrom[0].valueFrom.key: the environment has no variable AGENTLOOM_TEST_UNSET_TENANT (a valueFrom is read from the variable its key names): set it`;
    const others = [
      `${folder}/servers.yaml:8:37: spec.headersFrom[0].value: header Authorization carries a credential, which is never written in a manifest: keep it in a Secret and write valueFrom: { type: Secret, name: <the Secret>, key: AUTHORIZATION } (agentloom reads the key from the environment variable AUTHORIZATION)`,
      `${folder}/servers.yaml:9:37: spec.headersFrom[1].valueFrom: write type: Secret (or type: ConfigMap)`,
      `${folder}/servers.yaml:10:72: spec.headersFrom[2].valueFrom.env: unknown key "env" in valueFrom; kagent names a Secret's key: write valueFrom: { type: Secret, name: <secret>, key: MCP_OTHER }`,
    ];
    const result = validate([folder], { AGENTLOOM_TEST_UNSET_TENANT: undefined });
    expect(result.status).toBe(1);
    expect(result.lines).toEqual([tenant, ...others, `4 problems in ${folder}`]);
    expect(result.stdout).not.toContain('ghp_0123456789abcdefghijABCDEFGHIJ');
    // --no-env: the missing variable is a warning; the mistakes in the files stay problems.
    const noEnv = validate(['--no-env', folder], { AGENTLOOM_TEST_UNSET_TENANT: undefined });
    expect(noEnv.status).toBe(1);
    expect(noEnv.lines).toEqual([
      tenant.replace(':12:78: ', ':12:78: warning: '),
      ...others,
      `3 problems in ${folder}`,
    ]);
  });

  it('a process serving the file refuses to start without the variable, naming it as validate does', async () => {
    const dev = new ServerProcess(
      [
        'dev',
        '--apps',
        `${DIR}/missing-variable.yaml`,
        '--port',
        String(await freePort()),
        '--data',
        join(data, 'dev'),
      ],
      { AGENTLOOM_TEST_UNSET_MCP_TOKEN: undefined, GEMINI_API_KEY: 'unused-in-this-test' },
    );
    expect(await dev.exited, dev.output).toEqual({ code: 1, signal: null });
    expect(dev.stderr).toContain(MISSING);
  }, 120_000);
});
