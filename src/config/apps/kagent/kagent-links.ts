/**
 * The references between kagent Agent manifests of one folder: every named Agent must exist, an Agent is a step
 * of one workflow at most (an agent has one parent), references form no cycle, and every Agent is reachable from
 * the root. The root is the Agent annotated `agentloom.dev/root: "true"`, else the one no other Agent references.
 */
import { ROOT_ANNOTATION, type KagentAgent } from './kagent-schema.js';
import { suggest, type ConfigProblem, type YamlDocument, type YamlPath } from '../shared/yaml-source.js';

/** A parsed manifest with the agent name it becomes. */
export interface Manifest {
  source: YamlDocument;
  data: KagentAgent;
  /** `metadata.name` as a JS identifier. */
  ident: string;
  report(path: YamlPath, message: string, options?: { key?: boolean }): void;
}

/** The checked references of a set of manifests. */
export interface ManifestLinks {
  problems: ConfigProblem[];
  /** The root Agent, when it could be decided. */
  root?: Manifest;
  /** The Agent a reference (`name` or `namespace/name`) names; only call it on checked references. */
  target(reference: string): Manifest;
  /** The description the workflow that runs this Agent gives it, if any. */
  stepDescription(name: string): string | undefined;
}

/** A manifest with problems: its name still exists for others, and its references are still checked. */
export interface InvalidManifest {
  source: YamlDocument;
  name: string | undefined;
  data: unknown;
}

interface Reference {
  from: Manifest;
  name: string;
  namespace?: string;
  path: YamlPath;
  /** A workflow step (the workflow becomes its parent), rather than a tool. */
  step: boolean;
  description?: string;
}

function split(reference: string): { name: string; namespace?: string } {
  const at = reference.lastIndexOf('/');
  return at < 0 ? { name: reference } : { name: reference.slice(at + 1), namespace: reference.slice(0, at) };
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function listAt(value: unknown, ...keys: string[]): unknown[] {
  let current = value;
  for (const key of keys) current = isRecord(current) ? current[key] : undefined;
  return Array.isArray(current) ? current : [];
}

function nameOf(value: unknown): string | undefined {
  return isRecord(value) && typeof value.name === 'string' ? value.name : undefined;
}

/**
 * Every reference a manifest makes, read from its raw data so that a manifest with problems elsewhere still has
 * its references checked.
 */
function referencesOf(from: Manifest | InvalidManifest): Omit<Reference, 'from'>[] {
  const refs: Omit<Reference, 'from'>[] = [];
  const add = (target: unknown, path: YamlPath, step: boolean): void => {
    const reference = nameOf(target);
    // A reference with a url is an agent served elsewhere (a RemoteA2aAgent), not an Agent of the folder.
    if (reference === undefined || (isRecord(target) && target.url !== undefined)) return;
    const namespace = isRecord(target) && typeof target.namespace === 'string' ? target.namespace : undefined;
    const description =
      isRecord(target) && typeof target.description === 'string' ? target.description : undefined;
    const parts = split(reference);
    refs.push({ ...parts, ...(namespace && !parts.namespace ? { namespace } : {}), path, step, description });
  };
  const data = 'ident' in from ? (from.data as unknown) : from.data;
  listAt(data, 'spec', 'declarative', 'subagents').forEach((subagent, i) => {
    const base = ['spec', 'declarative', 'subagents', i];
    if (!isRecord(subagent)) return;
    add(subagent.agent, [...base, 'agent', 'name'], false);
    listAt(subagent, 'workflow', 'agents').forEach((ref, j) =>
      add(ref, [...base, 'workflow', 'agents', j, 'name'], true),
    );
  });
  listAt(data, 'spec', 'declarative', 'tools').forEach((tool, i) => {
    if (isRecord(tool)) add(tool.agent, ['spec', 'declarative', 'tools', i, 'agent', 'name'], false);
  });
  return refs;
}

/** Indexes the manifests and checks every reference between them. */
export function linkManifests(
  manifests: readonly Manifest[],
  invalid: readonly InvalidManifest[],
  where: string,
): ManifestLinks {
  const problems: ConfigProblem[] = [];
  const byName = new Map<string, Manifest>();
  const byIdent = new Map<string, Manifest>();
  const report = (m: Manifest, path: YamlPath, message: string): void => {
    problems.push(m.source.problem(path, message));
  };
  const name = ['metadata', 'name'];
  for (const m of manifests) {
    const other = byName.get(m.data.metadata.name);
    if (other) {
      const { line } = other.source.position(name);
      report(
        m,
        name,
        `Agent "${m.data.metadata.name}" is already defined (${other.source.file}:${line}); rename one`,
      );
      continue;
    }
    const clash = byIdent.get(m.ident);
    if (clash) {
      report(
        m,
        name,
        `"${m.data.metadata.name}" and "${clash.data.metadata.name}" both become agent name "${m.ident}"; rename one`,
      );
    } else if (m.ident === 'user') {
      report(m, name, 'the agent name "user" is reserved for the end user; rename this Agent');
    }
    byName.set(m.data.metadata.name, m);
    byIdent.set(m.ident, m);
  }
  const edges = new Map<Manifest, { ref: Reference; to: Manifest }[]>();
  const stepOf = new Map<string, Reference>();
  const referenced = new Set<string>();
  const invalidNames = new Set(invalid.flatMap((m) => (m.name === undefined ? [] : [m.name])));
  const known = [...byName.keys(), ...invalidNames];
  let unresolved = 0;
  for (const m of [...byName.values(), ...invalid]) {
    const out: { ref: Reference; to: Manifest }[] = [];
    const from = 'ident' in m ? m : undefined;
    for (const partial of referencesOf(m)) {
      const to = byName.get(partial.name);
      if (!to) {
        if (invalidNames.has(partial.name)) continue;
        unresolved++;
        const near = suggest(partial.name, known, 'one of');
        problems.push(
          m.source.problem(
            partial.path,
            `no Agent named "${partial.name}" in ${where}; ${near.startsWith('did') ? `${near} Or ` : ''}add a manifest with kind: Agent and metadata.name: ${partial.name}`,
          ),
        );
        continue;
      }
      if (!from) continue;
      const ref: Reference = { from, ...partial };
      const namespace = to.data.metadata.namespace;
      if (ref.namespace && namespace && ref.namespace !== namespace) {
        report(
          from,
          ref.path,
          `Agent "${ref.name}" is in namespace "${namespace}", not "${ref.namespace}"; write ${namespace}/${ref.name} or ${ref.name}`,
        );
        continue;
      }
      if (ref.step) {
        const earlier = stepOf.get(ref.name);
        if (earlier) {
          report(
            from,
            ref.path,
            `Agent "${ref.name}" is already a step of a workflow of "${earlier.from.data.metadata.name}"; an agent runs in one workflow only, copy its manifest under another name`,
          );
          continue;
        }
        stepOf.set(ref.name, ref);
      }
      referenced.add(ref.name);
      out.push({ ref, to });
    }
    if (from) edges.set(from, out);
  }
  // Without every manifest valid, the root and the tree cannot be judged without false alarms.
  // A misspelt reference leaves its target unreferenced: judging the root now would only add false alarms.
  if (invalid.length > 0 || unresolved > 0) {
    return {
      problems,
      target: (r) => byName.get(split(r).name) as Manifest,
      stepDescription: () => undefined,
    };
  }
  const root = findRoot([...byName.values()], referenced, where, report);
  if (root) {
    const reached = new Set<Manifest>();
    const stack: Manifest[] = [];
    const visit = (m: Manifest): void => {
      reached.add(m);
      stack.push(m);
      for (const { ref, to } of edges.get(m) ?? []) {
        if (stack.includes(to)) {
          const cycle = [...stack.slice(stack.indexOf(to)), to].map((s) => s.data.metadata.name).join(' → ');
          report(
            m,
            ref.path,
            `Agent "${to.data.metadata.name}" would contain itself (${cycle}); remove this reference`,
          );
        } else if (!reached.has(to)) visit(to);
      }
      stack.pop();
    };
    visit(root);
    for (const m of byName.values()) {
      if (!reached.has(m)) {
        report(
          m,
          name,
          `Agent "${m.data.metadata.name}" is not used by the root Agent "${root.data.metadata.name}"; reference it from a subagent, or move it out of ${where}`,
        );
      }
    }
  }
  return {
    problems,
    ...(root ? { root } : {}),
    target: (reference) => byName.get(split(reference).name) as Manifest,
    stepDescription: (agent) => stepOf.get(agent)?.description,
  };
}

function findRoot(
  manifests: readonly Manifest[],
  referenced: ReadonlySet<string>,
  where: string,
  report: (m: Manifest, path: YamlPath, message: string) => void,
): Manifest | undefined {
  const annotated = manifests.filter((m) => m.data.metadata.annotations?.[ROOT_ANNOTATION] === 'true');
  const mark = `mark the root with metadata.annotations: { ${ROOT_ANNOTATION}: "true" }`;
  if (annotated.length > 1) {
    for (const m of annotated.slice(1)) {
      report(
        m,
        ['metadata', 'annotations', ROOT_ANNOTATION],
        `"${annotated[0]?.data.metadata.name}" is already annotated as the root; remove this annotation`,
      );
    }
    return undefined;
  }
  if (annotated.length === 1) return annotated[0];
  const candidates = manifests.filter((m) => !referenced.has(m.data.metadata.name));
  if (candidates.length === 1) return candidates[0];
  const first = manifests[0];
  if (candidates.length === 0 && first) {
    report(
      first,
      ['metadata', 'name'],
      `every Agent in ${where} is referenced by another, so none is the root; ${mark}`,
    );
  }
  if (candidates.length > 1) {
    const names = candidates.map((c) => c.data.metadata.name).join(', ');
    for (const m of candidates) {
      report(
        m,
        ['metadata', 'name'],
        `no other Agent references ${names}, so the root is ambiguous; ${mark} on one, or move the others out of ${where}`,
      );
    }
  }
  return undefined;
}
