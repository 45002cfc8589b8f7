/**
 * Instruction templating (SEMANTICS §3): `{key}`, `{key?}`, `{app:key}`, `{user:key}`, `{temp:key}`,
 * `{artifact.name}`. As in ADK, a placeholder's surrounding braces and whitespace are stripped before the name is
 * checked (`{{ key }` renders `key`); a body that is not a valid name is left as is, so JSON in instructions
 * survives.
 */
import { AgentloomError } from '../../core/errors.js';

const STATE_NAME = /^(?:(?:app|user|temp):)?[A-Za-z_][A-Za-z0-9_]*$/;
const ARTIFACT_NAME = /^artifact\.([A-Za-z0-9_.\-/]+)$/;

/** Whether `name` is a state key a template may reference (optionally scoped). */
export function isValidStateName(name: string): boolean {
  return STATE_NAME.test(name);
}

/** What rendering needs: the merged state view and a way to read an artifact as text. */
export interface RenderContext {
  state: Record<string, unknown>;
  loadArtifactText?: (name: string) => Promise<string | undefined>;
}

function render(value: unknown): string {
  return typeof value === 'string' ? value : JSON.stringify(value);
}

/** Renders a template; throws TEMPLATE naming a missing key (suggesting `{key?}`). */
export async function renderInstruction(template: string, ctx: RenderContext): Promise<string> {
  const pattern = /\{+[^{}]*\}+/g;
  let out = '';
  let last = 0;
  for (const match of template.matchAll(pattern)) {
    out += template.slice(last, match.index);
    last = (match.index ?? 0) + match[0].length;
    out += await replace(match[0], ctx);
  }
  return out + template.slice(last);
}

/** The name inside a placeholder: every surrounding brace, then surrounding whitespace, removed (ADK's rule). */
function bodyOf(raw: string): string {
  return raw.replace(/^\{+/, '').replace(/\}+$/, '').trim();
}

async function replace(raw: string, ctx: RenderContext): Promise<string> {
  let name = bodyOf(raw);
  const optional = name.endsWith('?');
  if (optional) name = name.slice(0, -1);
  const artifact = ARTIFACT_NAME.exec(name);
  if (artifact) {
    const text = await ctx.loadArtifactText?.(artifact[1] as string);
    if (text !== undefined) return text;
    if (optional) return '';
    throw new AgentloomError(
      'TEMPLATE',
      `instruction references artifact "${artifact[1]}", which does not exist; write {${name}?} to make it optional`,
      {
        details: { artifact: artifact[1] },
      },
    );
  }
  if (!isValidStateName(name)) return raw;
  const value = ctx.state[name];
  if (value !== undefined && value !== null) return render(value);
  if (optional) return '';
  throw new AgentloomError(
    'TEMPLATE',
    `instruction references state key "${name}", which is not set; set it earlier or write {${name}?} to make it optional`,
    {
      details: { key: name },
    },
  );
}
