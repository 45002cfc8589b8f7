/**
 * Declarative apps from YAML: a file, or a folder of `.yaml` / `.yml` files (not its subfolders). Each document
 * is either an agentloom app (`app:`, `agents:`; one app per document) or a kagent `Agent` manifest; all
 * kagent Agents of the path together form one app (see kagent-apps.ts for its root and name), with the
 * ModelConfig manifests of the path declaring the models they name (kagent-model-configs.ts) and its
 * RemoteMCPServer / MCPServer manifests the MCP servers of their tools (kagent-mcp-servers.ts). Other kagent kinds
 * (ToolServer, Memory) are skipped.
 *
 * Checking and loading are one code path ({@link checkAppsYaml}): `agentloom validate PATH` runs it with the names
 * `dev` / `worker --apps PATH` would have, so what passes one loads in the other and what fails there fails here.
 */
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { LineCounter, parseAllDocuments } from 'yaml';
import { AgentloomError } from '../../core/errors.js';
import { readKagentApp } from './kagent/kagent-apps.js';
import { MCP_SERVER_KINDS, McpServers } from './kagent/kagent-mcp-servers.js';
import { ModelConfigs } from './kagent/kagent-model-configs.js';
import { SKIPPED_KINDS } from './kagent/kagent-schema.js';
import { readNativeApp } from './native/native-apps.js';
import type { DeclarativeApp, Registries } from './shared/registries.js';
import { SecretEnv, type EnvOptions } from './shared/secret-refs.js';
import {
  formatProblem,
  sortProblems,
  suggest,
  syntaxProblems,
  YamlDocument,
  type ConfigProblem,
} from './shared/yaml-source.js';

export type { ConfigProblem } from './shared/yaml-source.js';

export { formatProblem } from './shared/yaml-source.js';
export type { DeclarativeApp, Registries } from './shared/registries.js';
export type { EnvOptions, MissingEnv } from './shared/secret-refs.js';

/** Apps read from YAML and every problem found (apps are only returned when there is no problem). */
export interface YamlAppsCheck {
  apps: DeclarativeApp[];
  problems: ConfigProblem[];
  /** Variables the files name that the environment lacks, under `missingEnv: 'warning'` (else they are problems). */
  warnings: ConfigProblem[];
}

const YAML_FILE = /\.ya?ml$/i;

/** Whether `path` is for the YAML loader: a `.yaml` / `.yml` file or a folder. */
export function isYamlAppsPath(path: string): boolean {
  return YAML_FILE.test(path) || (existsSync(path) && statSync(path).isDirectory());
}

function filesOf(path: string): string[] {
  if (!existsSync(path)) {
    throw new AgentloomError(
      'CONFIG',
      `${path} does not exist: pass a .yaml / .yml file or a folder of them`,
      {
        details: { path },
      },
    );
  }
  if (!statSync(path).isDirectory()) return [path];
  const files = readdirSync(path)
    .filter((name) => YAML_FILE.test(name) && statSync(join(path, name)).isFile())
    .sort()
    .map((name) => join(path, name));
  if (files.length === 0) {
    throw new AgentloomError(
      'CONFIG',
      `${path} holds no .yaml or .yml files: put the app definitions there`,
      {
        details: { path },
      },
    );
  }
  return files;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The documents of a path by kind, and the problems met reading them. */
interface FoundDocuments {
  native: YamlDocument[];
  kagent: YamlDocument[];
  modelConfigs: YamlDocument[];
  mcpServers: YamlDocument[];
  problems: ConfigProblem[];
}

/**
 * Splits a file into documents: native apps, kagent Agents and ModelConfigs; parse errors and strays become
 * problems.
 */
function readFile(file: string, into: FoundDocuments): void {
  const lineCounter = new LineCounter();
  const docs = parseAllDocuments(readFileSync(file, 'utf8'), { lineCounter });
  const list = Array.isArray(docs) ? docs : [];
  for (const doc of list) {
    if (doc.errors.length > 0) {
      into.problems.push(...syntaxProblems(file, doc));
      continue;
    }
    const source = new YamlDocument(file, doc, lineCounter);
    const data = source.data();
    if (data === null || data === undefined) continue;
    if (!isRecord(data)) {
      into.problems.push(
        source.problem(
          [],
          'write an agentloom app (app:, agents:) or a kagent Agent manifest (apiVersion:, kind: Agent)',
        ),
      );
    } else if (!('apiVersion' in data) && !('kind' in data)) {
      into.native.push(source);
    } else if (data.kind === 'Agent') {
      into.kagent.push(source);
    } else if (data.kind === 'ModelConfig' && String(data.apiVersion).startsWith('kagent.dev/')) {
      into.modelConfigs.push(source);
    } else if (
      (MCP_SERVER_KINDS as readonly unknown[]).includes(data.kind) &&
      String(data.apiVersion).startsWith('kagent.dev/')
    ) {
      into.mcpServers.push(source);
    } else if (!(
      typeof data.kind === 'string' &&
      SKIPPED_KINDS.includes(data.kind) &&
      String(data.apiVersion).startsWith('kagent.dev/')
    )) {
      const kind = String(data.kind);
      into.problems.push(
        source.problem(
          ['kind'],
          `agentloom reads kagent.dev manifests of kind Agent (and skips ${SKIPPED_KINDS.join(', ')}); ${suggest(kind, ['Agent', ...SKIPPED_KINDS], 'one of')}`,
        ),
      );
    }
  }
  if (list.every((doc) => doc.contents === null)) {
    into.problems.push({
      file,
      line: 1,
      col: 1,
      path: '(document)',
      message: 'the file is empty: define an app (app:, agents:) or kagent Agents',
    });
  }
}

/**
 * Reads and checks the apps at `path` without throwing on their content: every problem of every file is in
 * `problems` (sorted by file, line, column), and `apps` is empty unless there is none. Tool and model names are
 * checked against the built-in tools, Gemini ids, the files' ModelConfigs and `registries` (absent records are
 * empty: nothing registered in code). Every variable the files name (secrets: `valueFrom`, `apiKeySecretKey`) is read
 * from `options.env` (default: this process's); a missing one is a problem, or with `missingEnv: 'warning'` a
 * warning (`validate --no-env`). Throws CONFIG when the path does not exist or a folder has no YAML files.
 */
export async function checkAppsYaml(
  path: string,
  registries: Registries = {},
  options: EnvOptions = {},
): Promise<YamlAppsCheck> {
  const secrets = new SecretEnv(options);
  const found: FoundDocuments = { native: [], kagent: [], modelConfigs: [], mcpServers: [], problems: [] };
  for (const file of filesOf(path)) readFile(file, found);
  const problems = [...found.problems];
  const servers = [...found.modelConfigs, ...found.mcpServers];
  if (found.native.length === 0 && found.kagent.length === 0 && problems.length === 0 && servers.length > 0) {
    // Only manifests that Agents use (ModelConfigs, MCP servers): no app to serve.
    problems.push(
      (servers[0] as YamlDocument).problem(
        [],
        `${path} defines no app: its ${[...new Set(servers.map((d) => String((d.data() as { kind?: unknown }).kind)))].join(' and ')} manifests are read with the kagent Agents of the same folder; give the folder, or add an Agent`,
      ),
    );
  }
  const apps: { app: DeclarativeApp; source: YamlDocument }[] = [];
  for (const source of found.native) {
    const result = readNativeApp(source, registries, secrets);
    problems.push(...result.problems);
    if (result.app) apps.push({ app: result.app, source });
  }
  if (found.kagent.length > 0) {
    const result = readKagentApp(
      found.kagent,
      registries,
      path,
      await ModelConfigs.read(found.modelConfigs, secrets),
      McpServers.read(found.mcpServers, secrets),
      secrets,
    );
    problems.push(...result.problems);
    const first = found.kagent[0] as YamlDocument;
    if (result.app) apps.push({ app: result.app, source: first });
  }
  const seen = new Map<string, YamlDocument>();
  for (const { app, source } of apps) {
    const other = seen.get(app.name);
    if (other) {
      problems.push(
        source.problem(['app'], `app "${app.name}" is already defined in ${other.file}; rename one`),
      );
    }
    seen.set(app.name, source);
  }
  const warnings = sortProblems(secrets.warnings);
  if (problems.length > 0) return { apps: [], problems: sortProblems(problems), warnings };
  return { apps: apps.map((a) => a.app), problems: [], warnings };
}

/**
 * Loads declarative apps (agentloom YAML or kagent Agent manifests) from a file or a folder. Tools and models
 * are names checked against `registries` (the `tools` / `models` records given to `createEngine`; pass the same
 * ones there, since the agents keep the names; absent: none); `exit_loop`, Gemini ids (`gemini-…`) and the
 * files' Gemini ModelConfigs are always accepted.
 * The variables the files name are read from `options.env` (default: this process's environment): a missing one is
 * a problem naming it, so a process serving the app refuses to start.
 * Throws one AgentloomError VALIDATION listing every problem, one `file:line:col: path: message` per line, with
 * the problems in `details.problems`; nothing is constructed from an invalid file.
 */
export async function loadAppsFromYaml(
  path: string,
  registries: Registries = {},
  options: EnvOptions = {},
): Promise<{ apps: DeclarativeApp[]; errors: [] }> {
  const { apps, problems } = await checkAppsYaml(path, registries, options);
  if (problems.length > 0) {
    const count = problems.length === 1 ? '1 problem' : `${problems.length} problems`;
    throw new AgentloomError(
      'VALIDATION',
      `${count} in ${path}:\n${problems.map(formatProblem).join('\n')}`,
      {
        details: { path, problems },
      },
    );
  }
  return { apps, errors: [] };
}
