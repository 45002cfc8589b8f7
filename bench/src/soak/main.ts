/**
 * `npm run soak -- --minutes N [--retention 2m] [--warmup MIN] [--out DIR] [--no-charts] [--render] [--env K=V]...
 * [--heap-snapshots M,M] [--node-flag=F]...`:
 * hours of steady load on the
 * distributed mode, to show that agentloom can be left running. Starts its own PostgreSQL and Redis,
 * `agentloom migrate`, `agentloom api` and two `agentloom worker` processes with retention on, drives the mix of
 * driver.ts through the API, samples every 10 s (sampler.ts), then stops the load, waits for every run to end and
 * checks that each ended as it should. Writes results.json and SOAK.md (with charts unless --no-charts) into
 * --out (default: SOAK.md at the repository root, the rest in bench/results/soak/). Exit code 1 when a run ended
 * otherwise than it should, never ended, an API call failed, or a process logged an error the mix does not
 * provoke. No timing is asserted: the trends are for a person to read.
 *
 * To look for leaks: `--env K=V` (repeatable) sets an environment variable of the api and the workers (e.g.
 * MALLOC_ARENA_MAX=2); `--heap-snapshots 3,10` has each of them write a heap snapshot into DIR/heap/ at those
 * minutes of the load (SIGUSR2 with --heapsnapshot-signal, one process at a time; a snapshot pauses the process for
 * seconds and leaves its RSS higher, so a soak with snapshots is not one to read RSS trends from). Compare two with
 * `node --import tsx bench/src/soak/heap-diff.ts A.heapsnapshot B.heapsnapshot`.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import {
  chmodSync,
  closeSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readFileSync,
  readdirSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { cpus, tmpdir, totalmem } from 'node:os';
import { join, relative, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { Redis } from 'ioredis';
import pg from 'pg';
import { REPO } from '../context.js';
import { startWorkers, type WorkerProcess } from '../agentloom/workers.js';
import { sleep, waitFor } from '../measure.js';
import { createDatabase, startBenchPostgres, startLocalRedis } from '../services.js';
import { freePort } from '../../../test/support/services/local-services.js';
import { Driver, endState } from './driver.js';
import { Sampler, type Sample, type Watched } from './sampler.js';
import { formatWithPrettier } from '../report/format.js';
import { renderCharts, soakMarkdown, type SoakResult } from './report.js';

const APPS = resolve(import.meta.dirname, 'apps.ts');
const PREFIX = 'soak';
const SAMPLE_MS = 10_000;
/** Log lines the mix provokes on purpose (a model or a tool that throws, a cancelled call). */
const PROVOKED = /scripted failure|chore service is down|cancel/i;

const { values } = parseArgs({
  options: {
    minutes: { type: 'string', default: '60' },
    retention: { type: 'string', default: '2m' },
    out: { type: 'string' },
    'no-charts': { type: 'boolean', default: false },
    render: { type: 'boolean', default: false },
    env: { type: 'string', multiple: true, default: [] },
    'heap-snapshots': { type: 'string' },
    warmup: { type: 'string' },
    'node-flag': { type: 'string', multiple: true, default: [] },
  },
});
/**
 * The environment of the api and the workers: what the Docker image sets (Dockerfile ENV: MALLOC_ARENA_MAX=2, see
 * README "Operations"), then --env K=V (`--env K=` leaves K out: `--env MALLOC_ARENA_MAX=` runs with glibc's default arenas).
 */
const extraEnv: Record<string, string> = { MALLOC_ARENA_MAX: '2' };
for (const pair of values.env ?? []) {
  const eq = pair.indexOf('=');
  if (eq <= 0) {
    console.error(`soak: --env takes K=V, got ${pair}`);
    process.exit(2);
  }
  if (eq === pair.length - 1) delete extraEnv[pair.slice(0, eq)];
  else extraEnv[pair.slice(0, eq)] = pair.slice(eq + 1);
}
/**
 * Flags for node itself in the api and the workers (`--node-flag=--min-semi-space-size=16`, repeatable): V8's heap
 * sizing flags are not allowed in NODE_OPTIONS, so they go on the command line, before bin/agentloom.js.
 */
const nodeFlags = values['node-flag'] ?? [];
/** Minutes of the load at which to write heap snapshots. */
const snapshotMinutes = (values['heap-snapshots'] ?? '')
  .split(',')
  .filter((m) => m.trim() !== '')
  .map(Number)
  .sort((a, b) => a - b);
if (snapshotMinutes.some((m) => !Number.isFinite(m) || m < 0)) {
  console.error('soak: --heap-snapshots takes minutes, e.g. --heap-snapshots 3,10');
  process.exit(2);
}
const minutes = Number(values.minutes);
if (!Number.isFinite(minutes) || minutes <= 0) {
  console.error('soak: --minutes must be a positive number, e.g. --minutes 60');
  process.exit(2);
}
/** Minutes at the start left out of the trends: --warmup, else a quarter of the soak up to 10 minutes. */
const warmupSeconds =
  values.warmup === undefined ? Math.min(600, (minutes * 60) / 4) : Number(values.warmup) * 60;
if (!Number.isFinite(warmupSeconds) || warmupSeconds < 0 || warmupSeconds >= minutes * 60) {
  console.error(`soak: --warmup must be minutes from 0 to under --minutes (${minutes}), e.g. --warmup 10`);
  process.exit(2);
}
const outDir = values.out ? resolve(values.out) : join(REPO, 'bench/results/soak');
const snapshotDir = join(outDir, 'heap');
if (snapshotMinutes.length > 0) {
  mkdirSync(snapshotDir, { recursive: true });
  const flags = `--heapsnapshot-signal=SIGUSR2 --diagnostic-dir=${snapshotDir}`;
  extraEnv.NODE_OPTIONS = [process.env.NODE_OPTIONS, extraEnv.NODE_OPTIONS, flags].filter(Boolean).join(' ');
}
const reportPath = values.out ? join(outDir, 'SOAK.md') : join(REPO, 'SOAK.md');

function log(message: string): void {
  console.log(`soak ${new Date().toISOString().slice(11, 19)} ${message}`);
}

/** `agentloom api` as an operator starts it, its output in a log file. */
async function startApi(
  env: NodeJS.ProcessEnv,
  logPath: string,
): Promise<{ child: ChildProcess; url: string }> {
  const port = await freePort();
  const fd = openSync(logPath, 'a');
  const child = spawn(
    process.execPath,
    [...nodeFlags, join(REPO, 'bin/agentloom.js'), 'api', '--port', String(port), '--apps', APPS],
    { cwd: REPO, env, stdio: ['ignore', fd, fd] },
  );
  closeSync(fd);
  const url = `http://127.0.0.1:${port}`;
  await waitFor(
    async () => {
      if (child.exitCode !== null)
        throw new Error(`api exited:\n${readFileSync(logPath, 'utf8').slice(-3000)}`);
      return (await fetch(`${url}/readyz`).catch(() => undefined))?.ok === true;
    },
    { timeoutMs: 120_000, intervalMs: 200, what: 'agentloom api to be ready' },
  );
  return { child, url };
}

function errorLines(path: string): string[] {
  let text = '';
  try {
    text = readFileSync(path, 'utf8');
  } catch {
    return [];
  }
  return text
    .split('\n')
    .filter((line) => /"level":(50|60)/.test(line) && !PROVOKED.test(line))
    .map((line) => line.slice(0, 300));
}

/** Writes SOAK.md (and the charts unless --no-charts) from a result. */
async function writeReport(result: SoakResult): Promise<void> {
  const charts: string[] = [];
  if (!values['no-charts']) {
    for (const [file, svg] of Object.entries(await renderCharts(result))) {
      writeFileSync(join(outDir, file), svg);
      charts.push(relative(resolve(reportPath, '..'), join(outDir, file)));
    }
  }
  writeFileSync(reportPath, await formatWithPrettier(soakMarkdown(result, charts), reportPath));
}

async function main(): Promise<number> {
  if (values.render) {
    // --render: the report again from the results.json already in --out (after a change of the report).
    // --warmup with --render: the trends again from another start.
    const result = JSON.parse(readFileSync(join(outDir, 'results.json'), 'utf8')) as SoakResult;
    await writeReport(values.warmup === undefined ? result : { ...result, warmupSeconds });
    return 0;
  }
  const work = mkdtempSync(join(tmpdir(), 'agentloom-soak-'));
  chmodSync(work, 0o755); // the postgres user (when run as root) reaches its data directory
  mkdirSync(outDir, { recursive: true });
  const postgres = await startBenchPostgres(join(work, 'pg'));
  const redisServer = await startLocalRedis(join(work, 'redis'));
  const children: ChildProcess[] = [];
  let workers: WorkerProcess[] = [];
  const databaseUrl = await createDatabase(postgres.url, 'soak');
  const redisUrl = redisServer.url;
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    DATABASE_URL: databaseUrl,
    REDIS_URL: redisUrl,
    AGENTLOOM_QUEUE_PREFIX: PREFIX,
    ...extraEnv,
  };
  delete env.LOG_LEVEL;
  delete env.AGENTLOOM_API_KEYS;
  // A pool of one: a dropped connection of the sampler is replaced on the next query, and its 'error' event must not
  // end an hour's soak (a failed sample is logged and skipped, see below).
  const db = new pg.Pool({ connectionString: databaseUrl, max: 1 });
  db.on('error', (err) => log(`sampler's PostgreSQL connection: ${err.message}`));
  const redis = new Redis(redisUrl);
  redis.on('error', (err) => log(`sampler's Redis connection: ${err.message}`));
  let passed = false;
  try {
    const migrated = spawnSync(process.execPath, [join(REPO, 'bin/agentloom.js'), 'migrate'], {
      cwd: REPO,
      env,
    });
    if (migrated.status !== 0) throw new Error(`migrate failed: ${migrated.stderr.toString()}`);
    const api = await startApi(env, join(work, 'api.log'));
    children.push(api.child);
    const ports = [await freePort(), await freePort()];
    workers = [
      ...(await startWorkers(1, workerOptions(databaseUrl, redisUrl, work, ports[0] as number))),
      ...(await startWorkers(1, workerOptions(databaseUrl, redisUrl, work, ports[1] as number))),
    ];
    const watched: Watched[] = [
      { name: 'api', pid: api.child.pid as number, metricsUrl: `${api.url}/metrics` },
      ...workers.map((w, i) => ({
        name: `worker ${i + 1}`,
        pid: w.pid,
        metricsUrl: `http://127.0.0.1:${ports[i]}/metrics`,
      })),
    ];
    const sampler = new Sampler(watched, db, redis, PREFIX);
    const driver = new Driver(api.url);
    const samples: Sample[] = [];
    const started = Date.now();
    log(`load on for ${minutes} min (api ${api.url}, retention ${values.retention}), sampling every 10 s`);
    driver.start();
    await sampler.sample(0, driver.latencies(started, started)); // the histograms' baseline
    const end = started + minutes * 60_000;
    const snapshotsDue = [...snapshotMinutes];
    while (Date.now() < end) {
      if (snapshotsDue.length > 0 && Date.now() - started >= (snapshotsDue[0] as number) * 60_000) {
        snapshotsDue.shift();
        await writeHeapSnapshots(watched);
      }
      const windowStart = Date.now();
      await sleep(Math.min(SAMPLE_MS, Math.max(0, end - Date.now())));
      const t = (Date.now() - started) / 1000;
      let sample: Sample;
      try {
        sample = await sampler.sample(t, driver.latencies(windowStart, Date.now()));
      } catch (err) {
        log(`sample at ${t.toFixed(0)} s skipped: ${(err as Error).message}`);
        continue;
      }
      samples.push(sample);
      // The samples so far, each minute: an interrupted soak leaves its trends behind.
      if (samples.length % 6 === 0) {
        writeFileSync(
          join(outDir, 'results.partial.json'),
          JSON.stringify({ startedAt: new Date(started).toISOString(), minutes, warmupSeconds, samples }),
        );
      }
      if (samples.length % 6 === 0) {
        const rss = Object.entries(sample.processes)
          .map(([p, s]) => `${p} ${s.rssMb.toFixed(0)} MB`)
          .join(', ');
        log(
          `${(t / 60).toFixed(1)} min: ${driver.runs.length} runs started; ${rss}; step p99 ${sample.stepP99Ms} ms`,
        );
      }
    }
    driver.stopLoad();
    log('load off; waiting for every run to end');
    await driver.settle(180_000);
    const state = endState(driver.runs);
    const logErrors: Record<string, string[]> = { api: errorLines(join(work, 'api.log')) };
    workers.forEach((w, i) => (logErrors[`worker ${i + 1}`] = errorLines(w.logPath)));
    const result: SoakResult = {
      startedAt: new Date(started).toISOString(),
      minutes,
      retention: values.retention as string,
      warmupSeconds,
      samples,
      end: state,
      driverErrors: driver.errors,
      logErrors,
      env: extraEnv,
      nodeFlags,
      machine: `${cpus().length} × ${cpus()[0]?.model ?? 'cpu'}, ${Math.round(totalmem() / 2 ** 30)} GiB, Node ${process.version}`,
    };
    writeFileSync(join(outDir, 'results.json'), JSON.stringify(result, null, 1));
    rmSync(join(outDir, 'results.partial.json'), { force: true });
    await writeReport(result);
    const unprovoked = Object.values(logErrors).flat().length;
    log(
      `${state.started} runs: ${state.wrong.length} wrong, ${state.stuck} unfinished; ${driver.errors.length} API errors; ` +
        `${unprovoked} unprovoked error lines; report ${relative(REPO, reportPath)}`,
    );
    for (const w of state.wrong.slice(0, 10)) log(`wrong: ${JSON.stringify(w)}`);
    for (const e of driver.errors.slice(0, 10)) log(`API error: ${e}`);
    passed = state.wrong.length === 0 && state.stuck === 0 && driver.errors.length === 0 && unprovoked === 0;
    return passed ? 0 : 1;
  } finally {
    await Promise.all(workers.map((w) => w.stop(15_000)));
    for (const child of children) child.kill('SIGTERM');
    await Promise.all(
      children.map((c) => (c.exitCode === null ? new Promise((r) => c.once('exit', r)) : undefined)),
    );
    redis.disconnect();
    await db.end().catch(() => undefined);
    await redisServer.stop();
    await postgres.stop();
    if (passed) rmSync(work, { recursive: true, force: true });
    else log(`the processes' logs are kept in ${work}`);
  }
}

/** Has each watched process write a heap snapshot, one after the other (each waits for the last to be written). */
async function writeHeapSnapshots(watched: Watched[]): Promise<void> {
  for (const w of watched) {
    const before = new Set(readdirSync(snapshotDir));
    const startedAt = Date.now();
    process.kill(w.pid, 'SIGUSR2');
    // Written when the file exists and its size stops changing.
    let last = -1;
    await waitFor(
      () => {
        const file = readdirSync(snapshotDir).find((f) => !before.has(f) && f.includes(`.${w.pid}.`));
        if (!file) return false;
        const size = statSync(join(snapshotDir, file)).size;
        const done = size > 0 && size === last;
        last = size;
        return done;
      },
      { timeoutMs: 180_000, intervalMs: 1000, what: `a heap snapshot of ${w.name}` },
    );
    log(`heap snapshot of ${w.name} (pid ${w.pid}) in ${((Date.now() - startedAt) / 1000).toFixed(0)} s`);
  }
}

function workerOptions(databaseUrl: string, redisUrl: string, logDir: string, metricsPort: number) {
  return {
    databaseUrl,
    redisUrl,
    queue: 'redis' as const,
    prefix: PREFIX,
    logDir,
    apps: APPS,
    args: ['--metrics-port', String(metricsPort)],
    nodeArgs: nodeFlags,
    env: { AGENTLOOM_RETENTION: values.retention as string, ...extraEnv },
  };
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
