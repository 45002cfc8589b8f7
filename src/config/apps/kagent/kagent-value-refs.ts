/**
 * kagent's `ValueRef` lists (`headersFrom` of a RemoteMCPServer and of an Agent's tool): `{name, value}` or `{name,
 * valueFrom: {type: Secret | ConfigMap, name, key}}`. agentloom reads a valueFrom from the environment variable
 * named by `key`, as if the Secret (or ConfigMap) were mounted with envFrom — the mapping of ModelConfig's
 * `apiKeySecretKey`. A credential written in `value` is a problem: it belongs in a Secret.
 */
import {
  isSensitiveName,
  looksLikeSecret,
  variableFor,
  variableNameProblem,
  type SecretEnv,
} from '../shared/secret-refs.js';
import { suggest, type ConfigProblem, type YamlDocument, type YamlPath } from '../shared/yaml-source.js';

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

const VALUE_REF_KEYS = ['name', 'value', 'valueFrom'];
const VALUE_SOURCE_KEYS = ['type', 'name', 'key'];

/** Where a list is read: the manifest, its problems, the environment. */
export interface ValueRefContext {
  source: YamlDocument;
  problems: ConfigProblem[];
  secrets: SecretEnv;
}

/** The value of one ValueRef at `path`, or undefined after reporting. */
function readValueRef(ctx: ValueRefContext, ref: unknown, path: YamlPath): [string, string] | undefined {
  const report = (at: YamlPath, message: string): undefined => {
    ctx.problems.push(ctx.source.problem(at, message));
    return undefined;
  };
  if (!isRecord(ref))
    return report(
      path,
      'write { name: <header>, valueFrom: { type: Secret, name: <secret>, key: <variable> } }',
    );
  for (const key of Object.keys(ref).filter((k) => !VALUE_REF_KEYS.includes(k))) {
    return report(
      [...path, key],
      `unknown key "${key}" in headersFrom; ${suggest(key, VALUE_REF_KEYS, 'a known key')}`,
    );
  }
  const { name, value, valueFrom } = ref;
  if (typeof name !== 'string' || name === '')
    return report(path, 'write name: the header, e.g. name: Authorization');
  const variable = variableFor(name);
  const secretHint = `keep it in a Secret and write valueFrom: { type: Secret, name: <the Secret>, key: ${variable} } (agentloom reads the key from the environment variable ${variable})`;
  if (value !== undefined && valueFrom !== undefined) {
    return report([...path, 'value'], 'write value or valueFrom, not both');
  }
  if (value !== undefined) {
    if (typeof value !== 'string') return report([...path, 'value'], 'write value as text');
    if (isSensitiveName(name) || looksLikeSecret(value)) {
      const why = isSensitiveName(name)
        ? `header ${name} carries a credential`
        : `the value of header ${name} looks like a credential`;
      return report([...path, 'value'], `${why}, which is never written in a manifest: ${secretHint}`);
    }
    return [name, value];
  }
  if (!isRecord(valueFrom)) {
    return report(
      valueFrom === undefined ? path : [...path, 'valueFrom'],
      `write value: <text>, or valueFrom: { type: Secret, name: <secret>, key: ${variable} }`,
    );
  }
  const at = [...path, 'valueFrom'];
  for (const key of Object.keys(valueFrom).filter((k) => !VALUE_SOURCE_KEYS.includes(k))) {
    const hint =
      key === 'env'
        ? `kagent names a Secret's key: write valueFrom: { type: Secret, name: <secret>, key: ${String(valueFrom.env)} }`
        : suggest(key, VALUE_SOURCE_KEYS, 'a known key');
    return report([...at, key], `unknown key "${key}" in valueFrom; ${hint}`);
  }
  const before = ctx.problems.length;
  if (valueFrom.type !== 'Secret' && valueFrom.type !== 'ConfigMap') {
    report(valueFrom.type === undefined ? at : [...at, 'type'], 'write type: Secret (or type: ConfigMap)');
  }
  if (typeof valueFrom.name !== 'string' || valueFrom.name === '') {
    report(
      valueFrom.name === undefined ? at : [...at, 'name'],
      'write name: the Secret (or ConfigMap) that holds the value, e.g. name: mcp-tokens',
    );
  } else if (looksLikeSecret(valueFrom.name)) {
    report(
      [...at, 'name'],
      `name holds what looks like the secret itself: write the Secret's name here, and ${secretHint}`,
    );
  }
  const problem = variableNameProblem(valueFrom.key, 'key', variable);
  if (problem) report(valueFrom.key === undefined ? at : [...at, 'key'], problem);
  if (ctx.problems.length > before) return undefined;
  const read = ctx.secrets.read(
    ctx.source,
    [...at, 'key'],
    valueFrom.key as string,
    'a valueFrom is read from the variable its key names',
    ctx.problems,
  );
  return read === undefined ? undefined : [name, read];
}

/** The headers of a `headersFrom` list at `path`; undefined (after reporting) when any of them cannot be read. */
export function readHeadersFrom(
  ctx: ValueRefContext,
  list: unknown,
  path: YamlPath,
): Record<string, string> | undefined {
  if (list === undefined) return {};
  if (!Array.isArray(list)) {
    ctx.problems.push(
      ctx.source.problem(
        path,
        'write headersFrom as a list of { name, valueFrom: { type: Secret, name, key } }',
      ),
    );
    return undefined;
  }
  const headers: Record<string, string> = {};
  let ok = true;
  list.forEach((ref, i) => {
    const read = readValueRef(ctx, ref, [...path, i]);
    if (read) headers[read[0]] = read[1];
    else ok = false;
  });
  return ok ? headers : undefined;
}

/** The headers each Agent manifest sends: by tool entry and by agent reference (objects of the parsed manifest). */
export type ManifestHeaders = Map<object, Record<string, string>>;

/**
 * Reads the headers of every remote agent reference (`headers`, `headersFrom` of a `subagents[].agent` or workflow
 * step with a `url`) and of every McpServer tool (`tools[].headersFrom`, sent to a RemoteMCPServer on top of its own
 * headers) of one Agent manifest into `into`. `remote(name, kind)`: whether the tool's server is reached over HTTP.
 */
export function readManifestHeaders(
  ctx: ValueRefContext,
  declarative: {
    tools?: { type: string; mcpServer?: { name: string; kind?: string }; headersFrom?: unknown[] }[];
    subagents?: {
      agent?: AgentRefHeaders;
      workflow?: { agents: AgentRefHeaders[] };
      headersFrom?: unknown[];
    }[];
  },
  remote: (name: string, kind: string | undefined) => boolean | undefined,
  into: ManifestHeaders,
): void {
  const base = ['spec', 'declarative'];
  declarative.tools?.forEach((tool, i) => {
    if (tool.headersFrom === undefined) return;
    const at = [...base, 'tools', i, 'headersFrom'];
    const server = tool.mcpServer;
    const http = server && remote(server.name, server.kind);
    if (!http) {
      ctx.problems.push(
        ctx.source.problem(
          at,
          server && http === false
            ? `headersFrom is sent to servers over HTTP: "${server.name}" is a stdio MCPServer; remove headersFrom`
            : 'headersFrom applies to McpServer tools of a RemoteMCPServer of this folder; remove it here',
        ),
      );
      return;
    }
    const headers = readHeadersFrom(ctx, tool.headersFrom, at);
    if (headers) into.set(tool, headers);
  });
  declarative.subagents?.forEach((subagent, i) => {
    const refs: [AgentRefHeaders, YamlPath][] = [];
    if (subagent.agent) refs.push([subagent.agent, [...base, 'subagents', i, 'agent']]);
    subagent.workflow?.agents.forEach((ref, j) =>
      refs.push([ref, [...base, 'subagents', i, 'workflow', 'agents', j]]),
    );
    // The subagent's own headersFrom (reference 001's Subagent.headersFrom): sent to each of its remote agents.
    let shared: Record<string, string> | undefined = {};
    if (subagent.headersFrom !== undefined) {
      const at = [...base, 'subagents', i, 'headersFrom'];
      if (refs.some(([ref]) => ref.url !== undefined))
        shared = readHeadersFrom(ctx, subagent.headersFrom, at);
      else {
        ctx.problems.push(
          ctx.source.problem(
            at,
            'headersFrom is sent to agents served elsewhere: give an agent a url, or remove headersFrom',
          ),
        );
        return;
      }
    }
    for (const [ref, at] of refs) {
      if (shared === undefined) return;
      if (ref.url !== undefined && Object.keys(shared).length > 0) into.set(ref, shared);
      readReferenceHeaders(ctx, ref, at, into);
    }
  });
}

/** The header fields of an agent reference. */
interface AgentRefHeaders {
  url?: string;
  headers?: Record<string, string>;
  headersFrom?: unknown[];
}

function readReferenceHeaders(
  ctx: ValueRefContext,
  ref: AgentRefHeaders,
  at: YamlPath,
  into: ManifestHeaders,
): void {
  if (ref.headers === undefined && ref.headersFrom === undefined) return;
  if (ref.url === undefined) {
    const key = ref.headers !== undefined ? 'headers' : 'headersFrom';
    ctx.problems.push(
      ctx.source.problem(
        [...at, key],
        `${key} is sent to agents served elsewhere: add url, or remove ${key}`,
      ),
    );
    return;
  }
  const headers: Record<string, string> = {};
  let ok = true;
  for (const [name, value] of Object.entries(ref.headers ?? {})) {
    if (isSensitiveName(name) || looksLikeSecret(value)) {
      ctx.problems.push(
        ctx.source.problem(
          [...at, 'headers', name],
          `header ${name} carries a credential, which is never written in a manifest: move it to headersFrom: [{ name: ${name}, valueFrom: { type: Secret, name: <the Secret>, key: ${variableFor(name)} } }]`,
        ),
      );
      ok = false;
    } else headers[name] = value;
  }
  const fromSecrets = readHeadersFrom(ctx, ref.headersFrom, [...at, 'headersFrom']);
  // An agent's own headers win over its subagent entry's.
  if (ok && fromSecrets) into.set(ref, { ...into.get(ref), ...headers, ...fromSecrets });
}
