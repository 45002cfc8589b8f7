/**
 * The compiled package, as the Docker image runs it: `npm run build` in a copy of the repository, then the sources
 * removed (the runtime image has none) — `bin/agentloom.js` runs dist/ (the CLI answers, validates a YAML app and
 * migrates a database), the entry points package.json exports exist and load, and a TypeScript apps module that
 * imports 'agentloom' loads into the compiled engine.
 */
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

const REPO = resolve(import.meta.dirname, '../..');
const copy = mkdtempSync(join(tmpdir(), 'agentloom-build-'));
afterAll(() => rmSync(copy, { recursive: true, force: true }));

function run(command: string, args: string[]) {
  const result = spawnSync(command, args, { cwd: copy, encoding: 'utf8', timeout: 180_000 });
  return { status: result.status, out: `${result.stdout}${result.stderr}` };
}

describe('the compiled package', () => {
  it('builds with `npm run build` and runs from dist/ without its TypeScript sources', () => {
    // What the Dockerfile's build stage copies.
    for (const entry of [
      'package.json',
      'package-lock.json',
      'tsconfig.json',
      'tsconfig.build.json',
      'src',
      'console',
      'scripts/bundle-cli.ts',
    ]) {
      cpSync(join(REPO, entry), join(copy, entry), { recursive: true });
    }
    symlinkSync(join(REPO, 'node_modules'), join(copy, 'node_modules'), 'dir');
    const build = run('npm', ['run', 'build']);
    expect(build.status, build.out).toBe(0);

    // What its runtime stage has: dist/, bin/, migrations/, examples/ and package.json; no src/.
    rmSync(join(copy, 'src'), { recursive: true });
    for (const entry of ['bin', 'migrations', 'examples']) {
      cpSync(join(REPO, entry), join(copy, entry), { recursive: true });
    }
    expect(existsSync(join(copy, 'dist/src/cli/main.js'))).toBe(true);
    expect(existsSync(join(copy, 'dist/src/index.js'))).toBe(true);
    expect(existsSync(join(copy, 'dist/src/index.d.ts'))).toBe(true);
    // The web console, built with the rest, compressed twins included.
    for (const file of ['index.html', 'app.js', 'app.js.br', 'app.js.gz', 'app.css'])
      expect(existsSync(join(copy, 'dist/console', file)), file).toBe(true);

    const help = run(process.execPath, ['bin/agentloom.js', '--help']);
    expect(help.status, help.out).toBe(0);
    for (const command of ['migrate', 'api', 'worker'])
      expect(help.out).toMatch(new RegExp(`^  ${command}\\b`, 'm'));

    const validate = run(process.execPath, ['bin/agentloom.js', 'validate', 'examples/writer.yaml']);
    expect(validate.status, validate.out).toBe(0);

    const migrate = run(process.execPath, ['bin/agentloom.js', 'migrate', '--data', join(copy, 'pglite')]);
    expect(migrate.status, migrate.out).toBe(0);
    expect(migrate.out).toMatch(/migrate: applied 0000_init/);

    const entry = run(process.execPath, [
      '--input-type=module',
      '-e',
      "const m = await import('agentloom'); console.log(typeof m.createEngine, typeof m.LlmAgent);",
    ]);
    expect(entry.status, entry.out).toBe(0);
    expect(entry.out.trim()).toBe('function function');

    // A TypeScript apps module under the package (the Docker image's /app/apps) that imports 'agentloom': loaded by
    // the compiled engine, its agents are the engine's own classes (one copy of the package, not two).
    mkdirSync(join(copy, 'apps'));
    writeFileSync(
      join(copy, 'apps/apps.ts'),
      [
        "import { LlmAgent, type AppDefinition } from 'agentloom';",
        "export const apps: AppDefinition[] = [{ name: 'mine', agent: new LlmAgent({ name: 'mine', model: 'm' }) }];",
      ].join('\n'),
    );
    const engine = run(process.execPath, [
      '--input-type=module',
      '-e',
      [
        "const { createEngine } = await import('agentloom');",
        "const engine = await createEngine({ apps: 'apps/apps.ts', database: { pglite: 'memory' }, worker: false });",
        'console.log([...engine.apps.keys()].join(","));',
        'await engine.close();',
      ].join('\n'),
    ]);
    expect(engine.status, engine.out).toBe(0);
    expect(engine.out.trim()).toBe('mine');
  }, 240_000);
});
