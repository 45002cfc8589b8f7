/**
 * kagent MCP server manifests read with the Agents of the same path, which name them in `tools: - type: McpServer`
 * (`mcpServer: {kind, name, toolNames, requireApproval}`); each such tool entry becomes an McpToolset:
 *
 * - `RemoteMCPServer` (kagent.dev): `spec.url`, `spec.protocol` (STREAMABLE_HTTP, default, or SSE), `spec.timeout`
 *   (a duration: `30s`, `1m30s`, `500ms`), `spec.headersFrom` (`{name, value}`, or `{name, valueFrom: {type:
 *   Secret | ConfigMap, name, key}}`, read from the environment variable `key`, as if the Secret were mounted with
 *   envFrom — a missing variable is a problem at load, a credential in `value` too: kagent-value-refs.ts);
 * - kmcp `MCPServer` (kagent.dev): `spec.transportType: stdio` with `spec.deployment.cmd`, `args` and `env`, run as a
 *   child process in the manifest's folder (an `http` transport needs a Kubernetes Service: write a RemoteMCPServer
 *   with its URL instead).
 *
 * Problems carry the manifest's file and line, and say what to write.
 */
import { dirname, resolve } from 'node:path';
import type { McpToolsetOptions } from '../../../tools/mcp/mcp-toolset.js';
import { SecretEnv } from '../shared/secret-refs.js';
import type { ConfigProblem, YamlDocument, YamlPath } from '../shared/yaml-source.js';
import { readHeadersFrom } from './kagent-value-refs.js';

/** The kinds of MCP server manifests read. */
export const MCP_SERVER_KINDS = ['RemoteMCPServer', 'MCPServer'] as const;

/** An MCP server manifest as a toolset's connection and timeout, or why it cannot be one. */
interface McpServerDeclaration {
  kind: (typeof MCP_SERVER_KINDS)[number];
  /** Undefined when the manifest has problems (they are in `problems`). */
  options?: Pick<McpToolsetOptions, 'connection' | 'timeoutMs'>;
  problems: ConfigProblem[];
  /** `file:line` of the manifest, for messages. */
  at: string;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function field(value: unknown, key: string): unknown {
  return isRecord(value) ? value[key] : undefined;
}

/** Milliseconds of a Go-style duration (`30s`, `1m30s`, `500ms`), or undefined when it is not one. */
export function durationMs(text: string): number | undefined {
  const units: Record<string, number> = { h: 3_600_000, m: 60_000, s: 1_000, ms: 1 };
  const parts = [...text.matchAll(/(\d+(?:\.\d+)?)(ms|h|m|s)/g)];
  if (parts.length === 0 || parts.map((p) => p[0]).join('') !== text) return undefined;
  const ms = parts.reduce((sum, p) => sum + Number(p[1]) * (units[p[2] as string] as number), 0);
  return ms > 0 ? Math.round(ms) : undefined;
}

/** Reads one manifest; every problem is collected. */
function declare(
  source: YamlDocument,
  kind: McpServerDeclaration['kind'],
  secrets: SecretEnv,
): McpServerDeclaration {
  const problems: ConfigProblem[] = [];
  const report = (path: YamlPath, message: string) => problems.push(source.problem(path, message));
  const spec = field(source.data(), 'spec');
  const at = `${source.file}:${source.position([]).line}`;
  let timeoutMs: number | undefined;
  const timeout = field(spec, 'timeout');
  if (timeout !== undefined) {
    timeoutMs = typeof timeout === 'string' ? durationMs(timeout) : undefined;
    if (timeoutMs === undefined)
      report(['spec', 'timeout'], 'write timeout as a duration, e.g. timeout: 30s');
  }
  if (kind === 'RemoteMCPServer') {
    const url = field(spec, 'url');
    if (typeof url !== 'string' || !URL.canParse(url)) {
      report(['spec', 'url'], 'write url: the server address, e.g. url: http://127.0.0.1:3001/mcp');
    }
    const protocol = field(spec, 'protocol') ?? 'STREAMABLE_HTTP';
    if (protocol !== 'STREAMABLE_HTTP' && protocol !== 'SSE') {
      report(['spec', 'protocol'], 'write protocol: STREAMABLE_HTTP or protocol: SSE');
    }
    const headers = readHeadersFrom({ source, problems, secrets }, field(spec, 'headersFrom'), [
      'spec',
      'headersFrom',
    ]);
    const connection =
      typeof url === 'string'
        ? {
            url,
            ...(protocol === 'SSE' ? { transport: 'sse' as const } : {}),
            ...(headers && Object.keys(headers).length > 0 ? { headers } : {}),
          }
        : undefined;
    return {
      kind,
      at,
      problems,
      ...(problems.length === 0 && connection
        ? { options: { connection, ...(timeoutMs ? { timeoutMs } : {}) } }
        : {}),
    };
  }
  const transport = field(spec, 'transportType') ?? 'stdio';
  if (transport !== 'stdio') {
    report(
      ['spec', 'transportType'],
      'agentloom runs a kmcp MCPServer with transportType: stdio; for an HTTP server write a RemoteMCPServer with its url',
    );
  }
  const deployment = field(spec, 'deployment');
  const cmd = field(deployment, 'cmd');
  if (typeof cmd !== 'string' || cmd === '') {
    report(['spec', 'deployment', 'cmd'], 'write deployment: { cmd: <command>, args: [...] }, e.g. cmd: npx');
  }
  const args = field(deployment, 'args') ?? [];
  if (!Array.isArray(args) || args.some((a) => typeof a !== 'string')) {
    report(['spec', 'deployment', 'args'], 'write args as a list of text, e.g. args: [server.js]');
  }
  const envMap = field(deployment, 'env') ?? {};
  if (!isRecord(envMap) || Object.values(envMap).some((v) => typeof v !== 'string')) {
    report(['spec', 'deployment', 'env'], 'write env as a mapping of names to text');
  }
  const connection = {
    command: String(cmd),
    args: (Array.isArray(args) ? args : []).map(String),
    ...(isRecord(envMap) && Object.keys(envMap).length > 0 ? { env: envMap as Record<string, string> } : {}),
    cwd: dirname(resolve(source.file)),
  };
  return {
    kind,
    at,
    problems,
    ...(problems.length === 0 ? { options: { connection, ...(timeoutMs ? { timeoutMs } : {}) } } : {}),
  };
}

/** The MCP server manifests of a path, by kind and name. */
export class McpServers {
  private constructor(private readonly byKey: ReadonlyMap<string, McpServerDeclaration>) {}

  /** Reads the manifests among `sources` (the first of a kind and name counts). */
  static read(sources: readonly YamlDocument[], secrets: SecretEnv = new SecretEnv()): McpServers {
    const byKey = new Map<string, McpServerDeclaration>();
    for (const source of sources) {
      const data = source.data();
      const kind = field(data, 'kind') as McpServerDeclaration['kind'];
      const name = field(field(data, 'metadata'), 'name');
      if (typeof name !== 'string' || byKey.has(`${kind}/${name}`)) continue;
      byKey.set(`${kind}/${name}`, declare(source, kind, secrets));
    }
    return new McpServers(byKey);
  }

  static readonly none = new McpServers(new Map());

  /** Problems of every manifest. */
  problems(): ConfigProblem[] {
    return [...this.byKey.values()].flatMap((d) => d.problems);
  }

  /**
   * The server a tool entry names: of its `kind` when given (else either kind, RemoteMCPServer first). Undefined
   * when none of that name is in the path.
   */
  find(name: string, kind: string | undefined): McpServerDeclaration | undefined {
    const kinds = kind === undefined ? MCP_SERVER_KINDS : [kind];
    for (const k of kinds) {
      const found = this.byKey.get(`${k}/${name}`);
      if (found) return found;
    }
    return undefined;
  }

  /** `kind/name` of every server, for suggestions. */
  names(): string[] {
    return [...this.byKey.keys()];
  }
}
