// How long `agentloom dev` takes to answer its first /healthz: spawned, polled every 20 ms, then its process group
// stopped. Each round starts, in turn: the checkout's bin (its CLI bundle when the build is current, else the sources
// through tsx) on a new --data directory with the PGlite template and without it (AGENTLOOM_PGLITE_TEMPLATE=off: initdb in WebAssembly), the compiled build
// (dist/src/cli/main.js, what an installed package runs) on a new directory, and the bin again on the directory of
// its first start (an existing database). Interleaved, so a busy moment of the machine falls on every variant.
// Prints each variant's times, median and range. Needs `npm run build` (dist/) and a cached template (one start
// builds it).
//   node bench/scripts/dev-start.mjs [rounds=5]
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
/* global fetch */

const REPO = resolve(import.meta.dirname, '../..');
const rounds = Number(process.argv[2] ?? 5);

function freePort() {
  return new Promise((done, fail) => {
    const server = createServer();
    server.on('error', fail);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => done(port));
    });
  });
}

async function startOnce({ entry, data, env }) {
  const port = await freePort();
  const started = performance.now();
  const child = spawn(process.execPath, [entry, 'dev', '--port', String(port), '--data', data], {
    cwd: REPO,
    env: { ...process.env, ...env },
    stdio: 'ignore',
    detached: true,
  });
  try {
    for (;;) {
      if (child.exitCode !== null) throw new Error(`dev exited with ${child.exitCode} before answering`);
      const ok = await fetch(`http://127.0.0.1:${port}/healthz`).then(
        (r) => r.ok,
        () => false,
      );
      if (ok) return (performance.now() - started) / 1000;
      if (performance.now() - started > 300_000) throw new Error('dev did not answer /healthz within 300 s');
      await sleep(20);
    }
  } finally {
    try {
      process.kill(-child.pid, 'SIGKILL');
    } catch {
      // already gone
    }
    await new Promise((r) => (child.exitCode !== null ? r() : child.once('exit', r)));
  }
}

const bin = join(REPO, 'bin/agentloom.js');
const built = join(REPO, 'dist/src/cli/main.js');
const variants = {
  'new --data, template (bin)': { entry: bin, env: {} },
  'new --data, no template (bin)': { entry: bin, env: { AGENTLOOM_PGLITE_TEMPLATE: 'off' } },
  'new --data, template (compiled build)': { entry: built, env: {} },
  'existing --data (bin)': { entry: bin, env: {}, existing: true },
};
const times = Object.fromEntries(Object.keys(variants).map((k) => [k, []]));
const dirs = [];
const fresh = () => {
  const dir = mkdtempSync(join(tmpdir(), 'agentloom-dev-start-'));
  dirs.push(dir);
  return join(dir, 'data');
};
try {
  // Builds the template if this machine has none yet; not counted.
  await startOnce({ entry: bin, data: fresh(), env: {} });
  for (let round = 0; round < rounds; round++) {
    let last;
    for (const [name, v] of Object.entries(variants)) {
      const data = v.existing ? last : fresh();
      times[name].push(await startOnce({ entry: v.entry, data, env: v.env }));
      last = data;
    }
  }
} finally {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
}
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
for (const [name, xs] of Object.entries(times)) {
  const sorted = [...xs].sort((a, b) => a - b);
  console.log(
    `${name.padEnd(48)} median ${median(xs).toFixed(2)} s  (${sorted[0].toFixed(2)}–${sorted.at(-1).toFixed(2)})  ` +
      `runs: ${xs.map((x) => x.toFixed(2)).join(' ')}`,
  );
}
