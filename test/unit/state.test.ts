import { describe, expect, it } from 'vitest';
import { AgentloomError } from '../../src/core/errors.js';
import { applyToState, mergeScopes, splitDelta } from '../../src/store/repos/state.js';

describe('state scopes', () => {
  it('splits a delta by prefix and merges scopes back with prefixes', () => {
    const split = splitDelta({ a: 1, 'app:b': 2, 'user:c': 3, 'temp:d': 4 });
    expect(split).toEqual({ session: { a: 1 }, app: { b: 2 }, user: { c: 3 }, temp: { d: 4 } });
    expect(mergeScopes(split)).toEqual({ a: 1, 'app:b': 2, 'user:c': 3, 'temp:d': 4 });
  });

  it('appends to lists without dropping an existing scalar', () => {
    expect(
      applyToState({ l: [1], s: 'x' }, {}, [
        { key: 'l', value: 2 },
        { key: 's', value: 'y' },
        { key: 'n', value: 0 },
      ]),
    ).toEqual({
      l: [1, 2],
      s: ['x', 'y'],
      n: [0],
    });
  });

  it('rejects a delta that is not an object and a prefix without a name', () => {
    expect(() => splitDelta([1])).toThrow(AgentloomError);
    expect(() => splitDelta('x')).toThrow(/stateDelta must be an object/);
    expect(() => splitDelta({ 'user:': 1 })).toThrow(/has a scope prefix but no name/);
  });
});
