// Starts one benchmark PostgreSQL (bench/src/services.ts of the after checkout) and alternates probe processes
// of the two checkouts (ABBA order), writing every process's figures to argv[2].
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir, loadavg } from 'node:os';
import { join } from 'node:path';
const { startBenchPostgres } = await import('/work/wt-bench/bench/src/services.ts');
const outFile = process.argv[2];
const cycles = Number(process.argv[3] ?? 4);
const work = mkdtempSync(join(tmpdir(), 'w2probe-'));
chmodSync(work, 0o755);
const pgs = await startBenchPostgres(join(work, 'pg'));
const sides = { before: '/work/wt-before', after: '/work/wt-bench' };
const results = [];
try {
  let n = 0;
  for (let c = 0; c < cycles; c++) {
    for (const side of c % 2 ? ['after', 'before'] : ['before', 'after']) {
      const load = loadavg()[0];
      const r = spawnSync(process.execPath, ['--import', 'tsx', '/tmp/b29/w2probe/child.mjs', sides[side], pgs.url, `probe_${n++}`, '15'],
        { cwd: join(sides[side], 'bench'), encoding: 'utf8' });
      if (r.status !== 0) throw new Error(`${side}: ${r.stderr}`);
      const figures = JSON.parse(r.stdout.trim().split('\n').pop());
      results.push({ side, load, ...figures });
      const med = (a) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)];
      console.log(side, 'load', load.toFixed(2), 'W2 median', med(figures.w2).toFixed(0), 'cpu ms/step', med(figures.w2CpuMsPerStep).toFixed(3), 'W1 median', med(figures.w1).toFixed(2), 'cpu ms/step', med(figures.w1CpuMsPerStep).toFixed(3));
      writeFileSync(outFile, JSON.stringify(results, null, 1));
    }
  }
} finally {
  await pgs.stop();
  rmSync(work, { recursive: true, force: true });
}
