/**
 * A CPU profile of this process while `work` runs (V8's sampling profiler through node:inspector), summarised as
 * self time by area (agentloom folder, npm package, GC, idle) and by function. Used on the in-process
 * PostgreSQL mode, where the producer, the queue and the steps all run in the profiled process.
 */
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { join } from 'node:path';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
}

export interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
  startTime: number;
  endTime: number;
}

/** Self time of one area or function. */
export interface ProfileEntry {
  name: string;
  selfMs: number;
  percent: number;
}

/** What {@link cpuProfile} reports. */
export interface ProfileSummary {
  wallMs: number;
  /** Time the main thread was not idle. */
  busyMs: number;
  byArea: ProfileEntry[];
  byFunction: ProfileEntry[];
  /** Runs of the workload the profile spans (1 when absent). */
  runs?: number;
}

/** The area a frame belongs to: an agentloom folder, an npm package, or a V8/Node bucket. */
function areaOf(frame: ProfileNode['callFrame']): string {
  const { url, functionName } = frame;
  if (!url) {
    if (functionName === '(idle)') return '(idle)';
    if (functionName === '(garbage collector)') return '(garbage collector)';
    if (functionName === '(program)') return '(program: V8/native)';
    return functionName === 'dispatch'
      ? '(native) dispatch: inspector (profiler start/stop)'
      : `(native) ${functionName || 'anonymous'}`;
  }
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(url);
  if (pkg) return `npm: ${pkg[1]}`;
  const src = /\/src\/([^/]+)\//.exec(url);
  if (src && !url.includes('/bench/')) return `agentloom src/${src[1]}/`;
  if (url.includes('/bench/')) return 'bench harness';
  if (url.startsWith('node:')) return 'node internals';
  return 'other';
}

function shortUrl(url: string): string {
  const pkg = /node_modules\/(.*)$/.exec(url);
  if (pkg) return pkg[1] as string;
  const src = /\/(src\/.*)$/.exec(url);
  return src ? (src[1] as string) : url;
}

function top(map: Map<string, number>, totalMs: number, count: number): ProfileEntry[] {
  return [...map.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, count)
    .map(([name, selfMs]) => ({ name, selfMs, percent: (100 * selfMs) / totalMs }));
}

/**
 * Self time by area and by function of a V8 CPU profile; with `window` (CLOCK_MONOTONIC microseconds, the clock
 * of the profile's timestamps on Linux, as `process.hrtime` in any process), only the samples inside it.
 */
export function summarizeProfile(
  profile: Profile,
  window?: { fromUs: number; toUs: number },
): ProfileSummary {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const areas = new Map<string, number>();
  const functions = new Map<string, number>();
  let profilerMs = 0;
  let at = profile.startTime;
  profile.samples.forEach((id, i) => {
    const delta = profile.timeDeltas[i] ?? 0;
    at += delta;
    if (window && (at < window.fromUs || at > window.toUs)) return;
    const node = byId.get(id);
    if (!node) return;
    const ms = delta / 1000;
    // The inspector's own dispatch (Profiler.start / stop running synchronously) is the profiler, not the work.
    if (!node.callFrame.url && node.callFrame.functionName === 'dispatch') {
      profilerMs += ms;
      return;
    }
    const area = areaOf(node.callFrame);
    areas.set(area, (areas.get(area) ?? 0) + ms);
    if (area === '(idle)') return;
    const { functionName, url, lineNumber } = node.callFrame;
    const key = url ? `${functionName || '(anonymous)'} ${shortUrl(url)}:${lineNumber + 1}` : functionName;
    functions.set(key, (functions.get(key) ?? 0) + ms);
  });
  const spanUs = window
    ? Math.min(window.toUs, profile.endTime) - Math.max(window.fromUs, profile.startTime)
    : profile.endTime - profile.startTime;
  const wallMs = spanUs / 1000 - profilerMs;
  const busyMs = wallMs - (areas.get('(idle)') ?? 0);
  return { wallMs, busyMs, byArea: top(areas, wallMs, 20), byFunction: top(functions, wallMs, 25) };
}

/** Profiles this process while `work` runs. */
export async function cpuProfile(work: () => Promise<unknown>): Promise<ProfileSummary> {
  const session = new Session();
  session.connect();
  try {
    await session.post('Profiler.enable');
    await session.post('Profiler.setSamplingInterval', { interval: 500 });
    await session.post('Profiler.start');
    await work();
    const { profile } = (await session.post('Profiler.stop')) as { profile: Profile };
    // BENCH_CPUPROFILE_DIR=dir keeps each raw profile too, for Chrome DevTools or speedscope.
    const dir = process.env.BENCH_CPUPROFILE_DIR;
    if (dir) writeFileSync(join(dir, `${process.pid}-${Date.now()}.cpuprofile`), JSON.stringify(profile));
    return summarizeProfile(profile);
  } finally {
    await session.post('Profiler.disable').catch(() => undefined);
    session.disconnect();
  }
}
