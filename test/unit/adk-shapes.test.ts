/**
 * The pure parts of ADK compatibility: node paths in adk-python's shape, and finding ADK's dev UI where Node would
 * resolve `@google/adk-devtools` (a package laid out as npm installs it: a `dist/cjs` with a package.json of its
 * own, naming nothing, and the browser build beside it).
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { findAdkDevUi } from '../../src/api/adk/adk-dev-ui.js';
import { adkNodePath } from '../../src/api/adk/adk-json.js';

describe('adkNodePath', () => {
  it('writes every segment as name@run, a loop iteration k as run k + 1', () => {
    expect(adkNodePath('writer_pipeline')).toBe('writer_pipeline@1');
    expect(adkNodePath('writer_pipeline/research/research_web')).toBe(
      'writer_pipeline@1/research@1/research_web@1',
    );
    expect(adkNodePath('writer_pipeline/refine/critic#0')).toBe('writer_pipeline@1/refine@1/critic@1');
    expect(adkNodePath('root/outer#2/inner#0')).toBe('root@1/outer@3/inner@1');
  });

  it("leaves a user event's empty path empty", () => {
    expect(adkNodePath('')).toBe('');
  });
});

describe('findAdkDevUi', () => {
  const dir = mkdtempSync(join(tmpdir(), 'agentloom-devui-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  function install(project: string, { browser }: { browser: boolean }): string {
    const pkg = join(project, 'node_modules', '@google', 'adk-devtools');
    mkdirSync(join(pkg, 'dist', 'cjs'), { recursive: true });
    writeFileSync(
      join(pkg, 'package.json'),
      JSON.stringify({ name: '@google/adk-devtools', exports: { '.': { require: './dist/cjs/index.js' } } }),
    );
    writeFileSync(join(pkg, 'dist', 'cjs', 'package.json'), JSON.stringify({ type: 'commonjs' }));
    writeFileSync(join(pkg, 'dist', 'cjs', 'index.js'), 'throw new Error("must not be loaded");\n');
    if (browser) {
      mkdirSync(join(pkg, 'dist', 'browser'), { recursive: true });
      writeFileSync(join(pkg, 'dist', 'browser', 'index.html'), '<!doctype html>');
    }
    return join(pkg, 'dist', 'browser');
  }

  it('finds the browser build of the installed package without loading it', () => {
    const project = join(dir, 'installed');
    const browser = install(project, { browser: true });
    expect(findAdkDevUi([join(dir, 'elsewhere'), project])).toBe(browser);
  });

  it('finds nothing when the package is missing or has no browser build', () => {
    const project = join(dir, 'no-browser');
    install(project, { browser: false });
    expect(findAdkDevUi([project])).toBeUndefined();
    expect(findAdkDevUi([join(dir, 'nothing-here')])).toBeUndefined();
  });
});
