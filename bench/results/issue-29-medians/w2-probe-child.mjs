// One probe process: pg-local on a fresh database, the checkout's own bench modules and engine (argv[2]),
// warm-up, then N rounds of W2 and W1, each with wall time and this process's CPU time (user+system).
const [, , checkout, postgresUrl, dbName, roundsArg] = process.argv;
const rounds = Number(roundsArg ?? 15);
const { openMode } = await import(`${checkout}/bench/src/agentloom/modes.ts`);
const { w1, w2 } = await import(`${checkout}/bench/src/agentloom/workloads.ts`);
const ctx = { postgresUrl, redisUrl: 'redis://127.0.0.1:1', scale: {}, resultFile: '/dev/null', workDir: '/tmp' };
const target = await openMode('pg-local', ctx, { database: dbName });
const { engine } = target;
const cpuMs = (u) => (u.user + u.system) / 1000;
const out = { w2: [], w2CpuMsPerStep: [], w1: [], w1CpuMsPerStep: [] };
try {
  for (let i = 0; i < 3; i++) { await w1(engine); await w2(engine, 200); }
  for (let i = 0; i < rounds; i++) {
    let c = process.cpuUsage();
    out.w2.push(await w2(engine, 200));
    out.w2CpuMsPerStep.push(cpuMs(process.cpuUsage(c)) / 1000);
    c = process.cpuUsage();
    out.w1.push(await w1(engine));
    out.w1CpuMsPerStep.push(cpuMs(process.cpuUsage(c)) / 20);
  }
} finally {
  await target.close();
}
console.log(JSON.stringify(out));
