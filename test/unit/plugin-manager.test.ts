/**
 * The PluginManager, ported from adk-js (core/test/plugins/plugin_manager_test.ts): registration (the same object
 * or the same name twice refused), the early exit (the first plugin that returns a value ends the chain), a throw
 * wrapped in an error naming the plugin and the callback, every one of the twelve callbacks. Added: a method that
 * looks like a callback but is none of ADK's (a typo) is refused, by the manager and by createEngine, naming it.
 */
import { describe, expect, it } from 'vitest';
import {
  BasePlugin,
  createEngine,
  PluginManager,
  PLUGIN_CALLBACKS,
  type CallbackContext,
  type Content,
  type Event,
  type ModelRequest,
  type PluginCallbackName,
  type Tool,
  type ToolContext,
} from '../../src/index.js';

/** adk-js's TestPlugin: logs each callback, returns what `returnValues` holds, throws what `exceptionsToRaise` does. */
class TestPlugin extends BasePlugin {
  callLog: PluginCallbackName[] = [];
  returnValues: Partial<Record<PluginCallbackName, unknown>> = {};
  exceptionsToRaise: Partial<Record<PluginCallbackName, Error>> = {};

  constructor(name: string) {
    super(name);
    // Every callback through one handler (the subclass's methods, as ADK's test defines twelve overrides).
    for (const cb of PLUGIN_CALLBACKS) {
      Object.defineProperty(this, cb, { value: () => this.handle(cb) });
    }
  }

  private handle(name: PluginCallbackName): unknown {
    this.callLog.push(name);
    const error = this.exceptionsToRaise[name];
    if (error) throw error;
    return this.returnValues[name];
  }
}

const invocationContext = {
  invocationId: 'inv',
  appName: 'app',
  userId: 'u',
  sessionId: 's',
  rootAgent: 'a',
};
const callbackContext = { invocationId: 'inv', agentName: 'a' } as CallbackContext;
const tool = { name: 't' } as Tool;
const toolContext = { invocationId: 'inv' } as ToolContext;
const llmRequest = {} as ModelRequest;
const error = new Error('mock error');

describe('PluginManager (adk-js plugin_manager_test)', () => {
  it('registers and gets a plugin', () => {
    const service = new PluginManager();
    const plugin1 = new TestPlugin('plugin1');
    service.registerPlugin(plugin1);
    expect(service.getPlugin('plugin1')).toBe(plugin1);
  });

  it('throws when the same plugin object or the same name is registered twice', () => {
    const service = new PluginManager();
    const plugin1 = new TestPlugin('plugin1');
    service.registerPlugin(plugin1);
    expect(() => service.registerPlugin(plugin1)).toThrow(/plugin "plugin1" is registered twice/);
    expect(() => service.registerPlugin(new TestPlugin('plugin1'))).toThrow(
      /two plugins are named "plugin1"/,
    );
  });

  it('stops subsequent plugins when one returns a value', async () => {
    const plugin1 = new TestPlugin('plugin1');
    const plugin2 = new TestPlugin('plugin2');
    const answer: Content = { role: 'model', parts: [{ text: 'early' }] };
    plugin1.returnValues.beforeRunCallback = answer;
    const service = new PluginManager([plugin1, plugin2]);
    expect(await service.runBeforeRunCallback({ invocationContext })).toBe(answer);
    expect(plugin1.callLog).toContain('beforeRunCallback');
    expect(plugin2.callLog).not.toContain('beforeRunCallback');
  });

  it('calls all plugins when none returns a value', async () => {
    const plugin1 = new TestPlugin('plugin1');
    const plugin2 = new TestPlugin('plugin2');
    const service = new PluginManager([plugin1, plugin2]);
    expect(await service.runBeforeRunCallback({ invocationContext })).toBeUndefined();
    expect(plugin1.callLog).toEqual(['beforeRunCallback']);
    expect(plugin2.callLog).toEqual(['beforeRunCallback']);
  });

  it('wraps a plugin exception in an error naming the plugin and the callback (retryable)', async () => {
    const plugin1 = new TestPlugin('plugin1');
    plugin1.exceptionsToRaise.beforeRunCallback = new Error('Something went wrong inside the plugin!');
    const service = new PluginManager([plugin1]);
    await expect(service.runBeforeRunCallback({ invocationContext })).rejects.toMatchObject({
      code: 'PLUGIN_ERROR',
      retryable: true,
      message: 'plugin "plugin1" failed in beforeRunCallback: Something went wrong inside the plugin!',
      details: { plugin: 'plugin1', callback: 'beforeRunCallback' },
    });
  });

  it('supports all callbacks', async () => {
    const plugin1 = new TestPlugin('plugin1');
    const service = new PluginManager([plugin1]);
    await service.runOnUserMessageCallback({ invocationContext, userMessage: { role: 'user', parts: [] } });
    await service.runBeforeRunCallback({ invocationContext });
    await service.runAfterRunCallback({ invocationContext, outcome: { status: 'completed' } });
    await service.runOnEventCallback({ invocationContext, event: {} as Event });
    await service.runBeforeAgentCallback({ agent: { name: 'a' }, callbackContext });
    await service.runAfterAgentCallback({ agent: { name: 'a' }, callbackContext });
    await service.runBeforeToolCallback({ tool, toolArgs: {}, toolContext });
    await service.runAfterToolCallback({ tool, toolArgs: {}, toolContext, result: {} });
    await service.runOnToolErrorCallback({ tool, toolArgs: {}, toolContext, error });
    await service.runBeforeModelCallback({ callbackContext, llmRequest });
    await service.runAfterModelCallback({
      callbackContext,
      llmResponse: { content: { role: 'model', parts: [] } },
    });
    await service.runOnModelErrorCallback({ callbackContext, llmRequest, error });
    expect(plugin1.callLog).toEqual([
      'onUserMessageCallback',
      'beforeRunCallback',
      'afterRunCallback',
      'onEventCallback',
      'beforeAgentCallback',
      'afterAgentCallback',
      'beforeToolCallback',
      'afterToolCallback',
      'onToolErrorCallback',
      'beforeModelCallback',
      'afterModelCallback',
      'onModelErrorCallback',
    ]);
  });
});

describe('registration at createEngine', () => {
  // Refused before anything is opened: no database or queue is needed.
  const start = (plugins: unknown[]) =>
    createEngine({
      apps: [],
      database: { pglite: 'memory' },
      worker: false,
      plugins: plugins as BasePlugin[],
    });

  it('refuses a plugin registered twice and two plugins of one name, naming the plugin', async () => {
    const p = new TestPlugin('guard');
    await expect(start([p, p])).rejects.toMatchObject({
      code: 'VALIDATION',
      message: expect.stringContaining('plugin "guard" is registered twice'),
      details: { field: 'plugins[1]', plugin: 'guard' },
    });
    await expect(start([new TestPlugin('guard'), new TestPlugin('guard')])).rejects.toThrow(
      /two plugins are named "guard"/,
    );
  });

  it('refuses a method that looks like a callback but is none of the twelve, naming it', async () => {
    class Typo extends BasePlugin {
      beforeModelCalback(): undefined {
        return undefined;
      }
    }
    await expect(start([new Typo('typo')])).rejects.toMatchObject({
      code: 'VALIDATION',
      message: expect.stringMatching(
        /plugin "typo" has a method "beforeModelCalback", which is not a plugin callback: use one of onUserMessageCallback, /,
      ),
      details: { field: 'plugins[0].beforeModelCalback', plugin: 'typo' },
    });
    await expect(start([{ name: 'plain', afterToolCalback: () => undefined }])).rejects.toThrow(
      /plugin "plain" has a method "afterToolCalback"/,
    );
    await expect(start([{ name: '' }])).rejects.toThrow(/plugins\[0\] must be a plugin with a name/);
  });
});
