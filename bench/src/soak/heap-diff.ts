/**
 * `node --import tsx bench/src/soak/heap-diff.ts A.heapsnapshot B.heapsnapshot [--top N]`: what grew between two heap
 * snapshots of one process (`npm run soak -- --heap-snapshots 3,10` writes them). Prints, by constructor (objects,
 * closures; strings, arrays and the like by their type):
 *
 * - the change of count and of self size from A to B;
 * - the objects alive in B that were allocated after A (heap object ids persist across the snapshots of one
 *   process): in a steady state these are the work in flight, a leak is a kind that keeps adding up here;
 * - with `--retainers EventTarget,Map`: what holds the objects of those constructors allocated after A (a path of
 *   retainers toward the GC roots);
 * - the largest Maps and Sets of each snapshot (by their hash table) and what holds them: a map keyed by run, job
 *   or session that is never emptied grows here.
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';

interface Snapshot {
  snapshot: {
    meta: {
      node_fields: string[];
      node_types: [string[], ...unknown[]];
      edge_fields: string[];
      edge_types: [string[], ...unknown[]];
    };
  };
  nodes: number[];
  edges: number[];
  strings: string[];
}

/** A parsed snapshot with accessors by node index (the position of a node's first field / node field count). */
class Heap {
  readonly nodeCount: number;
  private readonly nf: number;
  private readonly ef: number;
  private readonly firstEdge: Uint32Array;
  private readonly f: Record<string, number>;
  private readonly e: Record<string, number>;
  private readonly types: string[];
  private readonly edgeTypes: string[];

  constructor(private readonly s: Snapshot) {
    const meta = s.snapshot.meta;
    this.nf = meta.node_fields.length;
    this.ef = meta.edge_fields.length;
    this.f = Object.fromEntries(meta.node_fields.map((n, i) => [n, i]));
    this.e = Object.fromEntries(meta.edge_fields.map((n, i) => [n, i]));
    this.types = meta.node_types[0];
    this.edgeTypes = meta.edge_types[0];
    this.nodeCount = s.nodes.length / this.nf;
    this.firstEdge = new Uint32Array(this.nodeCount + 1);
    for (let i = 0, edge = 0; i < this.nodeCount; i++) {
      this.firstEdge[i] = edge;
      edge += (s.nodes[i * this.nf + (this.f.edge_count as number)] as number) * this.ef;
    }
    this.firstEdge[this.nodeCount] = s.edges.length;
  }

  private field(i: number, name: string): number {
    return this.s.nodes[i * this.nf + (this.f[name] as number)] as number;
  }
  type(i: number): string {
    return this.types[this.field(i, 'type')] as string;
  }
  name(i: number): string {
    return this.s.strings[this.field(i, 'name')] as string;
  }
  id(i: number): number {
    return this.field(i, 'id');
  }
  selfSize(i: number): number {
    return this.field(i, 'self_size');
  }
  /** The grouping key of a node: constructor for objects and closures, the type for the rest. */
  key(i: number): string {
    const type = this.type(i);
    if (type === 'object' || type === 'closure' || type === 'native') return `${type} ${this.name(i)}`;
    if (type.includes('string')) return 'string';
    if (type === 'array' || type === 'hidden' || type === 'code')
      return `${type} ${this.name(i)}`.slice(0, 60);
    return type;
  }
  *edgesOf(i: number): Generator<{ type: string; name: string; to: number }> {
    for (let e = this.firstEdge[i] as number; e < (this.firstEdge[i + 1] as number); e += this.ef) {
      const type = this.edgeTypes[this.s.edges[e + (this.e.type as number)] as number] as string;
      const raw = this.s.edges[e + (this.e.name_or_index as number)] as number;
      const name = type === 'element' || type === 'hidden' ? `[${raw}]` : (this.s.strings[raw] as string);
      yield { type, name, to: (this.s.edges[e + (this.e.to_node as number)] as number) / this.nf };
    }
  }
  /**
   * What holds each node: its retainer on a shortest path of strong edges from the GC roots (a breadth-first walk
   * from the root node), so that following it up leads out of any cycle toward a root.
   */
  rootRetainers(): { from: Int32Array; edge: string[] } {
    const from = new Int32Array(this.nodeCount).fill(-1);
    const edge: string[] = new Array<string>(this.nodeCount);
    const seen = new Uint8Array(this.nodeCount);
    let frontier = [0];
    seen[0] = 1;
    while (frontier.length > 0) {
      const next: number[] = [];
      for (const i of frontier) {
        for (const e of this.edgesOf(i)) {
          if (e.type === 'weak' || e.type === 'shortcut' || seen[e.to]) continue;
          seen[e.to] = 1;
          if (this.type(i) !== 'synthetic') {
            from[e.to] = i;
            edge[e.to] = e.name;
          }
          next.push(e.to);
        }
      }
      frontier = next;
    }
    return { from, edge };
  }

  /** Every edge (from, name, to) pointing at one of `targets`. */
  retainers(targets: Set<number>): Map<number, { from: number; name: string }[]> {
    const out = new Map<number, { from: number; name: string }[]>();
    for (let i = 0; i < this.nodeCount; i++) {
      for (const edge of this.edgesOf(i)) {
        if (!targets.has(edge.to) || edge.type === 'weak') continue;
        const list = out.get(edge.to) ?? [];
        list.push({ from: i, name: edge.name });
        out.set(edge.to, list);
      }
    }
    return out;
  }
}

function load(path: string): Heap {
  return new Heap(JSON.parse(readFileSync(path, 'utf8')) as Snapshot);
}

interface Tally {
  count: number;
  size: number;
}

function tally(heap: Heap, include: (i: number) => boolean = () => true): Map<string, Tally> {
  const out = new Map<string, Tally>();
  for (let i = 0; i < heap.nodeCount; i++) {
    if (!include(i)) continue;
    const t = out.get(heap.key(i)) ?? { count: 0, size: 0 };
    t.count++;
    t.size += heap.selfSize(i);
    out.set(heap.key(i), t);
  }
  return out;
}

const kb = (bytes: number) => `${(bytes / 1024).toFixed(1)} KB`;

/** The Maps and Sets with the largest hash tables, and a path of retainers toward a named holder. */
function largestCollections(heap: Heap, top: number): string[] {
  const collections: { node: number; table: number }[] = [];
  for (let i = 0; i < heap.nodeCount; i++) {
    if (heap.type(i) !== 'object') continue;
    const name = heap.name(i);
    if (name !== 'Map' && name !== 'Set' && name !== 'WeakMap') continue;
    let table = 0;
    for (const edge of heap.edgesOf(i)) if (edge.name === 'table') table = heap.selfSize(edge.to);
    collections.push({ node: i, table });
  }
  collections.sort((a, b) => b.table - a.table);
  const chosen = collections.slice(0, top);
  const retainers = heap.retainers(new Set(chosen.map((c) => c.node)));
  return chosen.map(({ node, table }) => {
    const held = (retainers.get(node) ?? [])
      .slice(0, 3)
      .map((r) => `${heap.name(r.from) || heap.type(r.from)}.${r.name}`)
      .join(', ');
    return `${heap.name(node)} @${heap.id(node)} table ${kb(table)} held by ${held || '?'}`;
  });
}

function main(): void {
  const { positionals, values } = parseArgs({
    allowPositionals: true,
    options: { top: { type: 'string', default: '25' }, retainers: { type: 'string' } },
  });
  const [pathA, pathB] = positionals;
  if (!pathA || !pathB) {
    console.error('usage: heap-diff.ts A.heapsnapshot B.heapsnapshot [--top N] [--retainers Name,Name]');
    process.exit(2);
  }
  const top = Number(values.top);
  const a = load(pathA);
  const idsA = new Set<number>();
  for (let i = 0; i < a.nodeCount; i++) idsA.add(a.id(i));
  const tallyA = tally(a);
  const mapsA = largestCollections(a, 10);
  const b = load(pathB);
  const tallyB = tally(b);
  const fresh = tally(b, (i) => !idsA.has(b.id(i)));
  const total = (t: Map<string, Tally>) => [...t.values()].reduce((s, x) => s + x.size, 0);
  console.log(`A ${pathA}: ${a.nodeCount} nodes, ${kb(total(tallyA))}`);
  console.log(`B ${pathB}: ${b.nodeCount} nodes, ${kb(total(tallyB))}`);
  const rows = [...new Set([...tallyA.keys(), ...tallyB.keys()])].map((key) => {
    const ta = tallyA.get(key) ?? { count: 0, size: 0 };
    const tb = tallyB.get(key) ?? { count: 0, size: 0 };
    return { key, count: tb.count - ta.count, size: tb.size - ta.size, countB: tb.count };
  });
  console.log(`\nLargest growth by count (B − A), top ${top}:`);
  for (const r of [...rows].sort((x, y) => y.count - x.count).slice(0, top))
    console.log(`  ${String(r.count).padStart(8)}  ${kb(r.size).padStart(12)}  (${r.countB} in B)  ${r.key}`);
  console.log(`\nLargest growth by self size (B − A), top ${top}:`);
  for (const r of [...rows].sort((x, y) => y.size - x.size).slice(0, top))
    console.log(`  ${kb(r.size).padStart(12)}  ${String(r.count).padStart(8)}  ${r.key}`);
  console.log(`\nAlive in B, allocated after A (${kb(total(fresh))}), top ${top} by count:`);
  for (const [key, t] of [...fresh].sort((x, y) => y[1].count - x[1].count).slice(0, top))
    console.log(`  ${String(t.count).padStart(8)}  ${kb(t.size).padStart(12)}  ${key}`);
  if (values.retainers) {
    const wanted = new Set(values.retainers.split(','));
    const { from, edge } = b.rootRetainers();
    for (const name of wanted) {
      const paths = new Map<string, number>();
      for (let i = 0; i < b.nodeCount; i++) {
        if (b.name(i) !== name || idsA.has(b.id(i)) || (b.type(i) !== 'object' && b.type(i) !== 'closure'))
          continue;
        const steps: string[] = [];
        for (let n = i, depth = 0; depth < 7 && (from[n] as number) >= 0; depth++) {
          steps.push(`${edge[n]} ← ${b.name(from[n] as number).slice(0, 40) || b.type(from[n] as number)}`);
          n = from[n] as number;
        }
        const path = steps.join(' | ');
        paths.set(path, (paths.get(path) ?? 0) + 1);
      }
      console.log(
        `\nWhat holds the ${name} objects allocated after A (retainers toward the roots, 7 steps up):`,
      );
      for (const [path, n] of [...paths].sort((x, y) => y[1] - x[1]).slice(0, 8))
        console.log(`  ${String(n).padStart(6)}  ${path}`);
    }
  }
  console.log('\nLargest Maps and Sets in A:');
  for (const line of mapsA) console.log(`  ${line}`);
  console.log('\nLargest Maps and Sets in B:');
  for (const line of largestCollections(b, 10)) console.log(`  ${line}`);
}

main();
