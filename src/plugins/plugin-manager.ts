/**
 * The plugins of an engine in registration order (adk-js `plugins/plugin_manager.ts`): checked once when the
 * engine is made, then asked callback by callback. The first plugin that returns a value ends the chain (ADK's
 * early exit); a plugin that throws fails the step it ran in with PLUGIN_ERROR naming the plugin and the callback,
 * retryable like any step failure (the queue runs the step again).
 */
import type { Content } from '../core/content.js';
import { AgentloomError } from '../core/errors.js';
import type { Event } from '../core/event.js';
import type { ModelResponse } from '../models/model.js';
import { BasePlugin, PLUGIN_CALLBACKS, type PluginCallbackName } from './base-plugin.js';

/** A plugin: a BasePlugin, or any object with a `name` and some of its callbacks. */
export type Plugin = { readonly name: string } & Partial<Pick<BasePlugin, PluginCallbackName>>;

type Params<K extends PluginCallbackName> = Parameters<BasePlugin[K]>[0];
/** What a callback's chain resolves to: the first value a plugin returned. */
export type PluginResult<K extends PluginCallbackName> = K extends
  'onUserMessageCallback' | 'beforeRunCallback' | 'beforeAgentCallback' | 'afterAgentCallback'
  ? Content
  : K extends 'beforeModelCallback' | 'afterModelCallback' | 'onModelErrorCallback'
    ? ModelResponse
    : K extends 'onEventCallback'
      ? Event
      : K extends 'afterRunCallback'
        ? never
        : Record<string, unknown>;

const KNOWN: ReadonlySet<string> = new Set(PLUGIN_CALLBACKS);
/** A method name that looks meant as a callback: ADK's suffix, or the common misspelling of it. */
const CALLBACK_LIKE = /Call?back$/;

/** Every method name of `plugin`: its own and its prototypes' (up to Object). */
function methodNames(plugin: object): string[] {
  const names = new Set<string>();
  for (
    let o: object | null = plugin;
    o && o !== Object.prototype;
    o = Object.getPrototypeOf(o) as object | null
  ) {
    for (const key of Object.getOwnPropertyNames(o)) {
      if (typeof (o as Record<string, unknown>)[key] === 'function') names.add(key);
    }
  }
  return [...names];
}

/**
 * Checks one plugin: a non-empty `name`, and no method that looks like a callback but is none of ADK's twelve (a
 * typo such as `beforeModelCalback` would otherwise be silently never called).
 */
function checkPlugin(plugin: unknown, index: number): asserts plugin is Plugin {
  const name = (plugin as { name?: unknown } | null)?.name;
  if (typeof plugin !== 'object' || plugin === null || typeof name !== 'string' || name === '') {
    throw new AgentloomError(
      'VALIDATION',
      `plugins[${index}] must be a plugin with a name: new MyPlugin() where class MyPlugin extends BasePlugin and calls super('my_plugin')`,
      { details: { field: `plugins[${index}]` } },
    );
  }
  for (const method of methodNames(plugin)) {
    if (CALLBACK_LIKE.test(method) && !KNOWN.has(method)) {
      throw new AgentloomError(
        'VALIDATION',
        `plugin "${name}" has a method "${method}", which is not a plugin callback: use one of ${PLUGIN_CALLBACKS.join(', ')}`,
        { details: { field: `plugins[${index}].${method}`, plugin: name } },
      );
    }
  }
}

/** The plugins of one engine, in registration order. */
export class PluginManager {
  private readonly list: Plugin[] = [];

  /** @throws AgentloomError `VALIDATION` naming a plugin registered twice or a method that is no callback. */
  constructor(plugins: readonly unknown[] = []) {
    if (!Array.isArray(plugins)) {
      throw new AgentloomError('VALIDATION', 'plugins must be a list of plugins: [new MyPlugin()]', {
        details: { field: 'plugins' },
      });
    }
    plugins.forEach((plugin, index) => this.registerPlugin(plugin, index));
  }

  /** Adds a plugin after the others (ADK's registerPlugin). */
  registerPlugin(plugin: unknown, index = this.list.length): void {
    checkPlugin(plugin, index);
    if (this.list.includes(plugin)) {
      throw new AgentloomError('VALIDATION', `plugin "${plugin.name}" is registered twice: list it once`, {
        details: { field: `plugins[${index}]`, plugin: plugin.name },
      });
    }
    if (this.list.some((p) => p.name === plugin.name)) {
      throw new AgentloomError(
        'VALIDATION',
        `two plugins are named "${plugin.name}": plugin names must be unique (give one another name)`,
        { details: { field: `plugins[${index}]`, plugin: plugin.name } },
      );
    }
    this.list.push(plugin);
  }

  /** The plugins, in registration order. */
  get plugins(): readonly Plugin[] {
    return this.list;
  }

  /** The plugin registered under `name`. */
  getPlugin(name: string): Plugin | undefined {
    return this.list.find((p) => p.name === name);
  }

  /** Whether any plugin implements `callback` (BasePlugin's defaults do nothing: only overrides count). */
  has(callback: PluginCallbackName): boolean {
    return this.list.some((p) => overrides(p, callback));
  }

  /**
   * Asks every plugin in order; resolves with the first value one returns (undefined, null: go on). A throw becomes
   * PLUGIN_ERROR naming the plugin and the callback (retryable: the step runs again), its cause kept.
   */
  async run<K extends PluginCallbackName>(
    callback: K,
    params: Params<K>,
  ): Promise<PluginResult<K> | undefined> {
    for (const plugin of this.list) {
      const fn = plugin[callback] as ((p: Params<K>) => unknown) | undefined;
      if (typeof fn !== 'function') continue;
      let value: unknown;
      try {
        value = await fn.call(plugin, params);
      } catch (err) {
        throw pluginError(plugin.name, callback, err);
      }
      if (value !== undefined && value !== null) return value as PluginResult<K>;
    }
    return undefined;
  }

  // ADK's names for the same calls (PluginManager.run…Callback).
  runOnUserMessageCallback(p: Params<'onUserMessageCallback'>): Promise<Content | undefined> {
    return this.run('onUserMessageCallback', p);
  }
  runBeforeRunCallback(p: Params<'beforeRunCallback'>): Promise<Content | undefined> {
    return this.run('beforeRunCallback', p);
  }
  async runAfterRunCallback(p: Params<'afterRunCallback'>): Promise<void> {
    await this.run('afterRunCallback', p);
  }
  runOnEventCallback(p: Params<'onEventCallback'>): Promise<Event | undefined> {
    return this.run('onEventCallback', p);
  }
  runBeforeAgentCallback(p: Params<'beforeAgentCallback'>): Promise<Content | undefined> {
    return this.run('beforeAgentCallback', p);
  }
  runAfterAgentCallback(p: Params<'afterAgentCallback'>): Promise<Content | undefined> {
    return this.run('afterAgentCallback', p);
  }
  runBeforeModelCallback(p: Params<'beforeModelCallback'>): Promise<ModelResponse | undefined> {
    return this.run('beforeModelCallback', p);
  }
  runAfterModelCallback(p: Params<'afterModelCallback'>): Promise<ModelResponse | undefined> {
    return this.run('afterModelCallback', p);
  }
  runOnModelErrorCallback(p: Params<'onModelErrorCallback'>): Promise<ModelResponse | undefined> {
    return this.run('onModelErrorCallback', p);
  }
  runBeforeToolCallback(p: Params<'beforeToolCallback'>): Promise<Record<string, unknown> | undefined> {
    return this.run('beforeToolCallback', p);
  }
  runAfterToolCallback(p: Params<'afterToolCallback'>): Promise<Record<string, unknown> | undefined> {
    return this.run('afterToolCallback', p);
  }
  runOnToolErrorCallback(p: Params<'onToolErrorCallback'>): Promise<Record<string, unknown> | undefined> {
    return this.run('onToolErrorCallback', p);
  }
}

/** True when `plugin` has its own `callback`, not BasePlugin's default. */
function overrides(plugin: Plugin, callback: PluginCallbackName): boolean {
  for (
    let o: object | null = plugin;
    o && o !== Object.prototype;
    o = Object.getPrototypeOf(o) as object | null
  ) {
    if (!Object.prototype.hasOwnProperty.call(o, callback)) continue;
    // The first definition found is the one used: BasePlugin's own is a default that does nothing.
    return o !== BasePlugin.prototype;
  }
  return false;
}

/** The error a plugin's throw becomes: names the plugin and the callback; the step is run again. */
export function pluginError(plugin: string, callback: string, cause: unknown): AgentloomError {
  const message = cause instanceof Error ? cause.message : String(cause);
  return new AgentloomError('PLUGIN_ERROR', `plugin "${plugin}" failed in ${callback}: ${message}`, {
    retryable: true,
    cause,
    details: { plugin, callback },
  });
}
