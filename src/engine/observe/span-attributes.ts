/**
 * What agentloom's spans carry: the names and attributes of ADK's and the GenAI semantic conventions
 * (`invoke_agent`, `chat`, `execute_tool`, `gen_ai.*`) and ours (`agentloom.*`), and how an error is recorded
 * (status ERROR, `error.type` = the API's error code, an exception event). Pure helpers over `@opentelemetry/api`.
 */
import { SpanStatusCode, type Attributes, type Span } from '@opentelemetry/api';

/** The GenAI `gen_ai.provider.name` of a model's `provider` ('OpenAI' → 'openai', 'Gemini' → 'gcp.gemini', …). */
export function genAiProvider(provider: string | undefined): string {
  switch (provider) {
    case undefined:
      return 'unknown';
    case 'Gemini':
      return 'gcp.gemini';
    case 'Azure OpenAI':
      return 'azure.ai.openai';
    default:
      return provider.toLowerCase().replaceAll(' ', '_');
  }
}

/** The loop iteration a node path's last segment names (`…/leaf#2` → 2), if any. */
export function loopIterationOf(path: string): number | undefined {
  const segment = path.slice(path.lastIndexOf('/') + 1);
  const hash = segment.lastIndexOf('#');
  if (hash < 0) return undefined;
  const iteration = Number(segment.slice(hash + 1));
  return Number.isInteger(iteration) ? iteration : undefined;
}

/** What names an agent node in span attributes. */
export interface SpanNode {
  invocationId: string;
  sessionId: string;
  app: string;
  agent: string;
  kind: string;
  path: string;
}

/**
 * The attributes of the `invoke_agent {agent}` span of a node: the agent's one invocation in the GenAI semantic
 * conventions (`gen_ai.operation.name` = `invoke_agent`), plus the node's {@link nodeAttributes}.
 */
export function agentInvocationAttributes(node: SpanNode): Attributes {
  return { 'gen_ai.operation.name': 'invoke_agent', ...nodeAttributes(node) };
}

/**
 * The attributes that place a span at a node (`gen_ai.agent.name` and `agentloom.*`), without claiming to be the
 * agent's invocation: each `step {agent}` span (one per attempt of a leaf) carries these, so a GenAI dashboard
 * counts one `invoke_agent` per node, not one more per attempt.
 */
export function nodeAttributes(node: SpanNode): Attributes {
  const iteration = loopIterationOf(node.path);
  return {
    'gen_ai.agent.name': node.agent,
    'agentloom.workflow.type': node.kind,
    'agentloom.node.path': node.path,
    'agentloom.invocation.id': node.invocationId,
    'agentloom.session.id': node.sessionId,
    'agentloom.app': node.app,
    ...(iteration === undefined ? {} : { 'agentloom.loop.iteration': iteration }),
  };
}

/** The code of an error as the API answers it (`AgentloomError.code`, a stored error's code), else INTERNAL. */
export function errorCodeOf(err: unknown): string {
  const code = typeof err === 'object' && err !== null ? (err as { code?: unknown }).code : undefined;
  return typeof code === 'string' && code !== '' ? code : 'INTERNAL';
}

/** Records an error on a span: status ERROR with the message, `error.type` = its code, an exception event. */
export function recordError(span: Span, err: unknown): void {
  const code = errorCodeOf(err);
  const message =
    typeof err === 'object' && err !== null && typeof (err as { message?: unknown }).message === 'string'
      ? (err as { message: string }).message
      : String(err);
  span.setAttribute('error.type', code);
  span.setStatus({ code: SpanStatusCode.ERROR, message });
  span.addEvent('exception', { 'exception.type': code, 'exception.message': message });
}

/** A value as a span attribute (JSON unless a string). */
export function jsonAttribute(value: unknown): string {
  return typeof value === 'string' ? value : JSON.stringify(value);
}
