/**
 * Where a problem is in a YAML file: a parsed document keeps its `LineCounter`, so a path into the data
 * (`agents[2].subAgents[0].maxIterations`) maps back to the line and column of the node that holds it, and each
 * zod issue becomes a {@link ConfigProblem} pointing at the key or value to change.
 */
import { isMap, isScalar, isSeq, type Document, type LineCounter } from 'yaml';
import * as z from 'zod';

/** A path into a YAML document: mapping keys and sequence indexes. */
export type YamlPath = readonly (string | number)[];

/** One problem of a declarative file: where it is and what to write instead. */
export interface ConfigProblem {
  /** The file as the caller named it (a folder's files are joined to the folder's path). */
  file: string;
  /** 1-based line of the offending key or value (of its parent mapping when the key is missing). */
  line: number;
  /** 1-based column. */
  col: number;
  /** The YAML path, e.g. `agents[2].subAgents[0].maxIterations`; `(document)` for the whole document. */
  path: string;
  /** What is wrong and what to write instead. */
  message: string;
}

/** `agents[2].subAgents[0].name`, or `(document)` for the empty path. */
export function formatPath(path: YamlPath): string {
  let out = '';
  for (const segment of path) {
    out += typeof segment === 'number' ? `[${segment}]` : out ? `.${segment}` : segment;
  }
  return out || '(document)';
}

/** The one-line form every tool prints: `file:line:col: path: message`. */
export function formatProblem(problem: ConfigProblem): string {
  return `${problem.file}:${problem.line}:${problem.col}: ${problem.path}: ${problem.message}`;
}

/** Problems sorted by file, line and column (the order a reader fixes them in). */
export function sortProblems(problems: readonly ConfigProblem[]): ConfigProblem[] {
  return [...problems].sort(
    (a, b) =>
      a.file.localeCompare(b.file) || a.line - b.line || a.col - b.col || a.path.localeCompare(b.path),
  );
}

function distance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    let previous = row[0] as number;
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const current = row[j] as number;
      const cost = a[i - 1]?.toLowerCase() === b[j - 1]?.toLowerCase() ? 0 : 1;
      row[j] = Math.min(current + 1, (row[j - 1] as number) + 1, previous + cost);
      previous = current;
    }
  }
  return row[b.length] as number;
}

/** The candidate closest to `word` when it is close enough to be a likely typo, else undefined. */
export function closest(word: string, candidates: Iterable<string>): string | undefined {
  const lower = word.toLowerCase();
  let best: { name: string; score: number } | undefined;
  let prefixed: string | undefined;
  for (const name of candidates) {
    const other = name.toLowerCase();
    // "int" → "integer", "Sequential" → "SequentialAgent": a prefix is the likeliest meaning.
    if (lower.length >= 3 && (other.startsWith(lower) || lower.startsWith(other))) {
      if (!prefixed || name.length < prefixed.length) prefixed = name;
    }
    const score = distance(word, name);
    if (!best || score < best.score) best = { name, score };
  }
  if (prefixed) return prefixed;
  return best && best.score <= Math.max(2, Math.floor(best.name.length / 3)) ? best.name : undefined;
}

/** "did you mean "x"?" when a candidate is close, else the list of candidates. */
export function suggest(word: string, candidates: readonly string[], noun = 'one of'): string {
  const near = closest(word, candidates);
  if (near) return `did you mean "${near}"?`;
  return candidates.length ? `write ${noun}: ${candidates.join(', ')}` : '';
}

/** The keys a zod schema accepts at `path` (through objects, arrays, records, optionals and defaults). */
function keysAt(schema: z.ZodType, path: readonly PropertyKey[]): string[] {
  let current: unknown = schema;
  const unwrap = (): void => {
    while (current instanceof z.ZodOptional || current instanceof z.ZodDefault) current = current.unwrap();
  };
  for (const segment of path) {
    unwrap();
    // A union (authScheme's types): the option that has the key.
    if (current instanceof z.ZodUnion) {
      current = (current.options as unknown[]).find(
        (o) => o instanceof z.ZodObject && String(segment) in (o.shape as object),
      );
    }
    if (current instanceof z.ZodObject) current = (current.shape as Record<string, unknown>)[String(segment)];
    else if (current instanceof z.ZodArray) current = current.element;
    else if (current instanceof z.ZodRecord) current = current.valueType;
    else return [];
  }
  unwrap();
  return current instanceof z.ZodObject ? Object.keys(current.shape as object) : [];
}

/** One parsed YAML document of a file, able to say where any path of its data is. */
export class YamlDocument {
  constructor(
    /** The file as the caller named it. */
    readonly file: string,
    readonly doc: Document.Parsed,
    private readonly lines: LineCounter,
  ) {}

  private cached: { value: unknown } | undefined;

  /** The document's data as plain JSON-like values. */
  data(): unknown {
    this.cached ??= { value: this.doc.toJS({ maxAliasCount: 1000 }) };
    return this.cached.value;
  }

  /** Line and column of the node at `path` (its key with `key: true`), else of its nearest ancestor. */
  position(path: YamlPath, options: { key?: boolean } = {}): { line: number; col: number } {
    let node: unknown = this.doc.contents;
    let offset = this.doc.contents?.range?.[0] ?? this.doc.range?.[0] ?? 0;
    for (let i = 0; i < path.length; i++) {
      const segment = path[i];
      const last = i === path.length - 1;
      let keyOffset: number | undefined;
      let next: unknown;
      if (isMap(node)) {
        const pair = node.items.find(
          (p) => String(isScalar(p.key) ? p.key.value : p.key) === String(segment),
        );
        if (!pair) break;
        keyOffset = isScalar(pair.key) ? pair.key.range?.[0] : undefined;
        next = pair.value;
      } else if (isSeq(node) && typeof segment === 'number') {
        next = node.items[segment];
      } else break;
      if (last && options.key && keyOffset !== undefined) {
        offset = keyOffset;
        break;
      }
      const range = (next as { range?: [number, number, number] } | null)?.range;
      if (!range) {
        // `key:` with no value: point at the key.
        if (keyOffset !== undefined) offset = keyOffset;
        break;
      }
      offset = range[0];
      node = next;
    }
    const { line, col } = this.lines.linePos(offset);
    return { line, col };
  }

  /** A problem at `path` (at its key with `key: true`). */
  problem(path: YamlPath, message: string, options: { key?: boolean } = {}): ConfigProblem {
    return { file: this.file, ...this.position(path, options), path: formatPath(path), message };
  }

  /**
   * Problems of a failed zod parse of the data at `base`. An unknown key becomes one problem per key, at the key,
   * naming the closest key the schema accepts there.
   */
  zodProblems(base: YamlPath, schema: z.ZodType, error: z.ZodError, what: string): ConfigProblem[] {
    // A required key that is missing because it is misspelt is one problem: the unknown key, not both.
    const misspelt = new Set<string>();
    for (const issue of error.issues) {
      if (issue.code !== 'unrecognized_keys') continue;
      const known = keysAt(schema, issue.path);
      for (const key of issue.keys) {
        const near = closest(key, known);
        if (near) misspelt.add(formatPath([...issue.path, near] as (string | number)[]));
      }
    }
    return error.issues.flatMap((issue) => {
      const path = [...base, ...(issue.path as (string | number)[])];
      if (issue.code !== 'unrecognized_keys') {
        const absent = !this.doc.hasIn(path);
        return absent && misspelt.has(formatPath(issue.path as (string | number)[]))
          ? []
          : [this.problem(path, issue.message)];
      }
      const known = keysAt(schema, issue.path);
      const where = [...issue.path].reverse().find((s) => typeof s === 'string') ?? what;
      return issue.keys.map((key) =>
        this.problem(
          [...path, key],
          `unknown key "${key}" in ${String(where)}; ${suggest(key, known, 'a known key')}`,
          {
            key: true,
          },
        ),
      );
    });
  }
}

/** Parse errors of a YAML file (syntax, duplicate keys) as problems. */
export function syntaxProblems(file: string, doc: Document.Parsed): ConfigProblem[] {
  return doc.errors.map((err) => {
    const [start] = err.linePos ?? [{ line: 1, col: 1 }];
    const reason = err.message.split('\n')[0]?.replace(/ at line \d+, column \d+:?$/, '') ?? err.message;
    return {
      file,
      line: start.line,
      col: start.col,
      path: '(yaml)',
      message: `${reason}; fix the YAML syntax here`,
    };
  });
}
