/**
 * `npm run demo` / `agentloom demo`: runs the reference pipeline on an embedded engine (PGlite on disk, in-process
 * queue), printing each event with its branch and author, pausing for the publish confirmation and answering
 * it, then printing the checkpoints. Offline with scripted models; on Gemini when GEMINI_API_KEY is set.
 */
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { pino } from 'pino';
import { LOG_REDACTION } from '../../core/log-redaction.js';
import { createEngine, loadEnv, type Engine } from '../../index.js';
import { buildWriterPipeline } from './demo-app.js';
import { formatEvent, formatNode } from '../terminal/format.js';

async function printEvents(engine: Engine, invocationId: string, afterSeq: number): Promise<number> {
  let last = afterSeq;
  for await (const event of engine.events(invocationId, { afterSeq, follow: true })) {
    console.log(formatEvent(event));
    last = event.seq;
  }
  return last;
}

/** Runs the demo; resolves with the final status. */
export async function runDemo(options: { dataDir?: string; topic?: string } = {}): Promise<string> {
  const env = loadEnv();
  const apiKey = env.GEMINI_API_KEY ?? env.GOOGLE_API_KEY;
  const dataDir = options.dataDir ?? join('.agentloom', 'demo');
  rmSync(dataDir, { recursive: true, force: true });
  const engine = await createEngine({
    apps: [{ name: 'writer', agent: buildWriterPipeline(apiKey ? 'gemini-2.5-flash' : undefined) }],
    database: { pglite: dataDir },
    logger: pino({ level: env.LOG_LEVEL ?? 'warn', redact: LOG_REDACTION }),
  });
  try {
    console.log(
      `agentloom demo — ${apiKey ? 'Gemini (gemini-2.5-flash)' : 'scripted models (offline)'}; data in ${dataDir}`,
    );
    const topic = options.topic ?? 'Write a short post about durable AI agents';
    const { invocationId } = await engine.enqueue({ app: 'writer', userId: 'demo-user', input: topic });
    console.log(`invocation ${invocationId}\n`);
    let seq = await printEvents(engine, invocationId, 0);
    let view = await engine.get(invocationId);
    while (view.status === 'paused') {
      for (const pending of view.pending) {
        console.log(
          `\n⏸  paused: ${pending.kind} of ${pending.name}(${JSON.stringify(pending.args).slice(0, 80)}…) at ${pending.nodePath}`,
        );
        console.log(
          `   approving call ${pending.callId} (as a reviewer would through the API, CLI or console)\n`,
        );
        await engine.confirm(pending.callId, { confirmed: true, by: 'demo-reviewer' });
      }
      seq = await printEvents(engine, invocationId, seq);
      view = await engine.get(invocationId);
    }
    console.log(
      `\nstatus: ${view.status}${view.error ? ` (${view.error.code}: ${view.error.message})` : ''}; model calls: ${view.llmCalls}`,
    );
    console.log(`output: ${view.output ?? '(none)'}`);
    console.log('\ncheckpoints (nodes):');
    for (const node of await engine.nodes(invocationId)) console.log(formatNode(node));
    return view.status;
  } finally {
    await engine.close();
  }
}
