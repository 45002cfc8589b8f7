/**
 * Replay (engine.replay): inside a replay run, the models and tools a leaf node resolves answer from the recorded
 * run's events at the same node path — read with the same Journal a resumed step reads its own with — so no
 * model or tool call leaves the process. Each call is checked against the recording first: a model call the
 * recording does not have (another order, more iterations), a request whose digest differs (a changed
 * instruction, other tools or tool parameters), a tool call with another name or other arguments. The first
 * mismatch fails the node with REPLAY_DIVERGED, naming the node and both sides.
 */
import { functionCallsOf } from '../../../core/content.js';
import { AgentloomError } from '../../../core/errors.js';
import type { Event } from '../../../core/event.js';
import { Journal } from '../../../agents/llm/journal.js';
import { requestDigest } from '../../../agents/llm/request-digest.js';
import type { GenerateOptions, Model, ModelRequest, ModelResponse } from '../../../models/model.js';
import { wrapTool, type Tool, type ToolContext } from '../../../tools/tool.js';
import type { Db } from '../../../store/db/database.js';
import { listEvents } from '../../../store/repos/events.js';

/** The recording of one node: the original run's events at its path. */
export interface ReplayRecording {
  events: readonly Event[];
}

function diverged(nodePath: string, what: string, expected: unknown, actual: unknown): AgentloomError {
  return new AgentloomError('REPLAY_DIVERGED', `replay diverged at ${nodePath}: ${what}`, {
    details: { nodePath, expected, actual },
  });
}

const canonical = (value: unknown): string =>
  JSON.stringify(value, (_k, v: unknown) =>
    v && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(
          Object.entries(v as Record<string, unknown>).sort(([a], [b]) => a.localeCompare(b)),
        )
      : v,
  );

/** Serves one node's model and tool calls from its recording. */
export class ReplayInterposer {
  private modelCalls = 0;

  constructor(
    private readonly nodePath: string,
    private readonly recording: ReplayRecording,
  ) {}

  private journal(agentName: string): Journal {
    return new Journal(this.recording.events, agentName);
  }

  /** A model answering with the recorded responses of this node, in order. */
  model(): Model {
    return {
      name: 'replay',
      generate: async (request: ModelRequest, _options?: GenerateOptions): Promise<ModelResponse> => {
        const agentName = request.agentName;
        const index = this.modelCalls++;
        const recorded = this.journal(agentName).modelEvents()[index];
        if (!recorded?.content) {
          throw diverged(
            this.nodePath,
            `model call ${index + 1} of ${agentName} was not made in the recorded run`,
            { modelCalls: index },
            { modelCalls: index + 1, agent: agentName },
          );
        }
        const was = recorded.actions.modelRequest;
        const now = requestDigest(request);
        if (was && (was.instruction !== now.instruction || was.tools !== now.tools)) {
          const what =
            was.instruction !== now.instruction ? 'the instruction' : 'the tools or their parameters';
          throw diverged(
            this.nodePath,
            `${what} of ${agentName} changed (model call ${index + 1})`,
            { ...was },
            {
              ...now,
              instruction_text: request.systemInstruction,
              tools_offered: request.tools.map((t) => t.name),
            },
          );
        }
        return { content: recorded.content };
      },
    } as Model;
  }

  /** `tool` answering with the recorded response of each call (no confirmation asked: it was answered then). */
  tool(tool: Tool, agentName: string): Tool {
    const replay = async (args: Record<string, unknown>, ctx: ToolContext): Promise<unknown> => {
      const journal = this.journal(agentName);
      const call = journal
        .modelEvents()
        .flatMap((e) => functionCallsOf(e.content))
        .find((c) => c.id === ctx.functionCallId);
      const found = journal.toolResponse(ctx.functionCallId);
      if (!call || !found || call.name !== tool.name || canonical(call.args ?? {}) !== canonical(args)) {
        throw diverged(
          this.nodePath,
          `tool call ${tool.name} of ${agentName} does not match the recorded run`,
          call ? { name: call.name, args: call.args ?? {} } : null,
          { name: tool.name, args },
        );
      }
      // The recorded call's effects on the run (exit_loop's escalation, a transfer, state it set) happen again.
      const actions = found.event.actions;
      if (actions.escalate) ctx.actions.escalate = true;
      if (actions.skipSummarization) ctx.actions.skipSummarization = true;
      if (actions.transferToAgent) ctx.actions.transferToAgent = actions.transferToAgent;
      for (const [key, value] of Object.entries(actions.stateDelta)) ctx.state.set(key, value);
      return found.response.response;
    };
    return wrapTool(tool, {
      isLongRunning: false,
      auth: undefined,
      requiresConfirmation: () => false,
      run: replay,
    });
  }
}

/**
 * The interposer of a leaf node of a replay run (`fork.replayOf` set by engine.replay): the recorded run's events
 * at the same path. Undefined for any other run.
 */
export async function replayInterposerFor(
  db: Db,
  fork: Record<string, unknown> | null,
  nodePath: string,
): Promise<ReplayInterposer | undefined> {
  const of = fork?.replayOf;
  const session = fork?.replaySession;
  if (typeof of !== 'string' || typeof session !== 'string') return undefined;
  const events = await listEvents(db, session, { invocationId: of, nodePath });
  return new ReplayInterposer(nodePath, { events });
}
