/** The templating table of SEMANTICS §3. */
import { describe, expect, it } from 'vitest';
import { AgentloomError } from '../../src/core/errors.js';
import { isValidStateName, renderInstruction } from '../../src/agents/llm/instructions.js';

const state = {
  topic: 'tea',
  count: 3,
  obj: { a: [1, 2] },
  'app:motd': 'hello',
  'user:lang': 'fr',
  'temp:scratch': true,
};
const artifacts: Record<string, string> = { 'notes.txt': 'artifact text' };
const ctx = { state, loadArtifactText: async (name: string) => artifacts[name] };

describe('renderInstruction', () => {
  it.each([
    ['About {topic}.', 'About tea.'],
    ['{count} items', '3 items'],
    ['data: {obj}', 'data: {"a":[1,2]}'],
    ['optional: [{missing?}]', 'optional: []'],
    ['present optional: {topic?}', 'present optional: tea'],
    ['{app:motd} {user:lang} {temp:scratch}', 'hello fr true'],
    ['{ topic }', 'tea'],
    ['notes: {artifact.notes.txt}', 'notes: artifact text'],
    ['no notes: [{artifact.other.txt?}]', 'no notes: []'],
    ['JSON {"a": 1} stays', 'JSON {"a": 1} stays'],
    ['empty { } stays', 'empty { } stays'],
    ['two words {a b} stay', 'two words {a b} stay'],
    ['digit first {1x} stays', 'digit first {1x} stays'],
    ['unknown scope {foo:bar} stays', 'unknown scope {foo:bar} stays'],
    // As in ADK, surrounding braces and whitespace are stripped before the name is checked.
    ['double {{topic}} renders', 'double tea renders'],
    ['uneven {{count  } renders', 'uneven 3 renders'],
    ['spaced {  topic  }, optional { nope? }.', 'spaced tea, optional .'],
    ['{  non-identifier-float}} stays', '{  non-identifier-float}} stays'],
    ["{'key1': 'value1'} and {{'key2': 'value2'}} stay", "{'key1': 'value1'} and {{'key2': 'value2'}} stay"],
    ['JSON {"a": {"b": 1}} stays', 'JSON {"a": {"b": 1}} stays'],
  ])('renders %j as %j', async (template, expected) => {
    expect(await renderInstruction(template, ctx)).toBe(expected);
  });

  it('names a missing state key and suggests the optional form', async () => {
    const err = await renderInstruction('Use {nope} here', ctx).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AgentloomError);
    expect((err as AgentloomError).code).toBe('TEMPLATE');
    expect((err as AgentloomError).message).toContain('"nope"');
    expect((err as AgentloomError).message).toContain('{nope?}');
  });

  it('names a missing artifact', async () => {
    await expect(renderInstruction('{artifact.gone.md}', ctx)).rejects.toThrow(/artifact "gone.md"/);
  });

  it('knows valid state names', () => {
    expect(isValidStateName('a_b1')).toBe(true);
    expect(isValidStateName('user:x')).toBe(true);
    expect(isValidStateName('1a')).toBe(false);
    expect(isValidStateName('a-b')).toBe(false);
  });
});
