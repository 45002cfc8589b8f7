/**
 * What native YAML reads from the environment: a tool entry's `auth:` (the code option's shape, see
 * tools/auth.ts) and the headers and variables of MCP servers and remote agents. A secret is always
 * `{ valueFrom: { env: NAME } }` (shared/secret-refs.ts): written in clear, in a field that holds one or under a
 * name that says it is one (`Authorization`, `GITHUB_TOKEN`), it is a problem at its line naming the fix.
 */
import type * as z from 'zod';
import { toolAuthSchema, type ToolAuth } from '../../../tools/auth.js';
import {
  envRefHint,
  isSensitiveName,
  looksLikeSecret,
  variableFor,
  variableNameProblem,
  type SecretEnv,
} from '../shared/secret-refs.js';
import { formatPath, type ConfigProblem, type YamlDocument, type YamlPath } from '../shared/yaml-source.js';
import { yamlAuthSchema } from './native-auth-schema.js';

/** Where values are read: the document, its problems, the environment. */
export interface SecretContext {
  source: YamlDocument;
  problems: ConfigProblem[];
  secrets: SecretEnv;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Fields of `auth` that hold a secret: only ever `{ valueFrom: { env } }`. */
const SECRET_FIELDS = [
  'rawAuthCredential.apiKey',
  'rawAuthCredential.http.credentials.token',
  'rawAuthCredential.http.credentials.password',
  'rawAuthCredential.oauth2.clientSecret',
];
/** Fields of `auth` that may be read from the environment too (who the deployment is: not secrets). */
const ENV_FIELDS = ['rawAuthCredential.oauth2.clientId', 'rawAuthCredential.http.credentials.username'];

/** Marks a value that could not be read (its problem is reported). */
const UNREADABLE = Symbol('unreadable');

/**
 * Reads `{ valueFrom: { env: NAME } }` at `path` (the value of `field`): the variable's value, or UNREADABLE
 * after reporting a wrong shape or a missing variable.
 */
function readEnvRef(
  ctx: SecretContext,
  value: Record<string, unknown>,
  path: YamlPath,
  field: string,
): string | typeof UNREADABLE {
  const example = variableFor(field);
  const report = (at: YamlPath, message: string): typeof UNREADABLE => {
    ctx.problems.push(ctx.source.problem(at, message));
    return UNREADABLE;
  };
  const extra = Object.keys(value).filter((k) => k !== 'valueFrom');
  if (extra.length > 0) {
    return report(
      [...path, extra[0] as string],
      `unknown key "${extra[0]}"; write { valueFrom: { env: ${example} } }`,
    );
  }
  const from = value.valueFrom;
  const at = [...path, 'valueFrom'];
  if (!isRecord(from))
    return report(at, `write valueFrom: { env: ${example} } (the variable that holds ${field})`);
  if ('key' in from || 'type' in from) {
    const key = typeof from.key === 'string' ? from.key : example;
    return report(
      at,
      `agentloom YAML reads secrets from environment variables, not Kubernetes Secrets: write valueFrom: { env: ${key} }`,
    );
  }
  const other = Object.keys(from).filter((k) => k !== 'env');
  if (other.length > 0) {
    return report(
      [...at, other[0] as string],
      `unknown key "${other[0]}" in valueFrom; write valueFrom: { env: ${example} }`,
    );
  }
  const problem = variableNameProblem(from.env, 'env', example);
  if (problem) return report(from.env === undefined ? at : [...at, 'env'], problem);
  const name = from.env as string;
  return (
    ctx.secrets.read(ctx.source, [...at, 'env'], name, `${field} is read from it`, ctx.problems) ?? UNREADABLE
  );
}

/**
 * A copy of `auth` with every `{ valueFrom: { env } }` replaced by its variable's value; a secret field written in
 * clear, a reference in a field that is never read from the environment, or a wrong reference is reported.
 */
function resolveAuthRefs(ctx: SecretContext, value: unknown, base: YamlPath, rel: YamlPath): unknown {
  const field = formatPath(rel);
  const name = String(rel.at(-1) ?? 'auth');
  const secret = SECRET_FIELDS.includes(field);
  if (isRecord(value) && 'valueFrom' in value) {
    if (secret || ENV_FIELDS.includes(field)) return readEnvRef(ctx, value, [...base, ...rel], name);
    ctx.problems.push(
      ctx.source.problem(
        [...base, ...rel, 'valueFrom'],
        `${field} is written in the file, not read from the environment: write it as text (valueFrom is for ${[...SECRET_FIELDS, ...ENV_FIELDS].map((f) => f.split('.').at(-1)).join(', ')})`,
      ),
    );
    return UNREADABLE;
  }
  if (secret) {
    const how = envRefHint(variableFor(name));
    const message =
      typeof value === 'string'
        ? `${name} is a secret and is never written in the file: ${how}`
        : `write ${name} as { valueFrom: { env: ${variableFor(name)} } }`;
    ctx.problems.push(ctx.source.problem([...base, ...rel], message));
    return UNREADABLE;
  }
  if (Array.isArray(value)) return value.map((v, i) => resolveAuthRefs(ctx, v, base, [...rel, i]));
  if (!isRecord(value)) return value;
  return Object.fromEntries(
    Object.entries(value).map(([k, v]) => [k, resolveAuthRefs(ctx, v, base, [...rel, k])]),
  );
}

function hasUnreadable(value: unknown): boolean {
  if (value === UNREADABLE) return true;
  if (Array.isArray(value)) return value.some(hasUnreadable);
  return isRecord(value) && Object.values(value).some(hasUnreadable);
}

/**
 * A tool entry's `auth:` at `path` as the code option (ToolAuth), its secrets read from the environment; undefined
 * after reporting every problem.
 */
export function readToolAuth(ctx: SecretContext, value: unknown, path: YamlPath): ToolAuth | undefined {
  const before = ctx.problems.length;
  if (!isRecord(value)) {
    ctx.problems.push(
      ctx.source.problem(
        path,
        'write auth as a mapping: { authScheme: { type: apiKey | http | oauth2, … }, rawAuthCredential?: …, credentialKey?: … }',
      ),
    );
    return undefined;
  }
  const resolved = resolveAuthRefs(ctx, value, path, []);
  // The shape is checked on what was written (a reference stands in for text), so every problem shows at once.
  const shaped = yamlAuthSchema.safeParse(resolved);
  if (!shaped.success) {
    ctx.problems.push(
      ...ctx.source
        .zodProblems(path, yamlAuthSchema, shaped.error, 'auth')
        .filter((p) => !unreadableAt(resolved, p.path, path)),
    );
  }
  if (ctx.problems.length > before || hasUnreadable(resolved)) return undefined;
  // The rules across fields (an oauth2 scheme needs its client; client credentials need the secret).
  const parsed = toolAuthSchema.safeParse(resolved);
  if (!parsed.success) {
    ctx.problems.push(...ctx.source.zodProblems(path, toolAuthSchema as z.ZodType, parsed.error, 'auth'));
    return undefined;
  }
  return parsed.data;
}

/** Whether the problem path `at` (formatted) is a value already reported as unreadable. */
function unreadableAt(resolved: unknown, at: string, base: YamlPath): boolean {
  const prefix = formatPath(base);
  if (!at.startsWith(prefix)) return false;
  let node: unknown = resolved;
  for (const segment of at.slice(prefix.length).match(/[^.[\]]+/g) ?? []) {
    if (Array.isArray(node)) node = node[Number(segment)];
    else if (isRecord(node)) node = node[segment];
    else return false;
  }
  return node === UNREADABLE;
}

/**
 * A mapping of headers (`kind` 'header') or environment variables ('variable') at `path`, each value text or
 * `{ valueFrom: { env } }`. Text under a name that carries a credential, or text that looks like one, is
 * reported. Undefined when absent or after reporting.
 */
export function readSecretMap(
  ctx: SecretContext,
  value: Record<string, unknown> | undefined,
  path: YamlPath,
  kind: 'header' | 'variable',
): Record<string, string> | undefined {
  if (value === undefined) return undefined;
  const out: Record<string, string> = {};
  let ok = true;
  for (const [name, entry] of Object.entries(value)) {
    const at = [...path, name];
    if (typeof entry === 'string') {
      if (isSensitiveName(name) || looksLikeSecret(entry)) {
        const why = isSensitiveName(name)
          ? `${kind} ${name} carries a credential`
          : `the value of ${kind} ${name} looks like a credential`;
        ctx.problems.push(
          ctx.source.problem(
            at,
            `${why}, which is never written in the file: ${envRefHint(variableFor(name))}`,
          ),
        );
        ok = false;
      } else out[name] = entry;
      continue;
    }
    if (!isRecord(entry)) {
      ctx.problems.push(
        ctx.source.problem(at, `write ${name} as text or as { valueFrom: { env: ${variableFor(name)} } }`),
      );
      ok = false;
      continue;
    }
    const read = readEnvRef(ctx, entry, at, name);
    if (read === UNREADABLE) ok = false;
    else out[name] = read;
  }
  return ok ? out : undefined;
}
