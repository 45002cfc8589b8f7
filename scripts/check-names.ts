/**
 * `npm run lint` part: no file, folder or exported name is named after an issue number (STYLE.md: "Name things by
 * what they do, never by the issue that asked for them"). Checked under src/, test/, bench/src/, bench/scripts/
 * and scripts/; exported names are read with TypeScript's parser (declarations and `export { … }` lists).
 *
 * A name is refused when it holds `issue` followed by a number (`issue33Goals`, `issue-17`), or when a part of it
 * (between separators: `-`, `_`, `.`) ends in letters then two or three digits (`why33`, `goals33`,
 * `reasons33`) and those letters are not a known prefix of a version, an algorithm or a size (`v03`, `sha256`,
 * `base64`, `int32`, `p99`, `x509`). One digit (`a2a`, `utf8`, `http2`, `oauth2`, `redis-1`), four and more
 * (`es2022`, `rfc6749`), or digits inside a camelCase name (`slopePer10Min`) never count: issue numbers here
 * have two or three, and end the name they were pasted onto. A false positive costs a word in KNOWN_PREFIXES below
 * (the message says so); a false negative, a name the review has to catch.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import ts from 'typescript';

const ROOTS = ['src', 'test', 'bench/src', 'bench/scripts', 'scripts'];
const SKIP = new Set(['node_modules', 'dist', '.agentloom']);

/**
 * Letters that, followed by two or three digits, name something other than an issue: a protocol or spec
 * version (`v03`), a Node or PostgreSQL major (`node24`, `pg15`), a hash, encoding or cipher (`sha256`, `base64`,
 * `crc32`, `aes256`, `x509`), an integer or float width (`int32`, `uint16`, `float64`), a percentile (`p99`),
 * a platform (`win32`), a curve (`ed25519` has five digits and needs none).
 */
const KNOWN_PREFIXES = new Set([
  'v',
  'node',
  'pg',
  'es',
  'sha',
  'md',
  'base',
  'utf',
  'crc',
  'aes',
  'x',
  'int',
  'uint',
  'float',
  'bigint',
  'p',
  'win',
  'ipv',
  'tls',
  'http',
]);

/** Why `name` reads as named after an issue, or undefined when it does not. */
export function issueNumberIn(name: string): string | undefined {
  if (/issue[-_ ]?\d+/i.test(name)) return '`issue` followed by a number';
  // Only digits that end a part of the name (between separators, or the name's end): a number inside a camelCase
  // name is nearly always a quantity with its unit after it (`slopePer10Min`, `last30Days`).
  for (const part of name.split(/[^A-Za-z0-9]+/)) {
    const m = /([A-Z]?[a-z]+|[A-Z]+)(\d{2,3})$/.exec(part);
    if (m && !KNOWN_PREFIXES.has((m[1] as string).toLowerCase()))
      return `"${part}" ends in a number that reads as an issue's`;
  }
  return undefined;
}

function* sourceFiles(dir: string): Generator<string> {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) {
      if (!SKIP.has(entry.name)) yield* sourceFiles(path);
    } else yield path;
  }
}

const isExported = (node: ts.Node): boolean =>
  ts.canHaveModifiers(node) &&
  (ts.getModifiers(node) ?? []).some((m) => m.kind === ts.SyntaxKind.ExportKeyword);

function bindingNames(name: ts.BindingName): string[] {
  if (ts.isIdentifier(name)) return [name.text];
  return name.elements.flatMap((e) => (ts.isBindingElement(e) ? bindingNames(e.name) : []));
}

/** The names a module exports by declaration or by an `export { … }` list (not `export *`, not `default`). */
export function exportedNames(path: string, text: string): string[] {
  const source = ts.createSourceFile(path, text, ts.ScriptTarget.Latest, false);
  const names: string[] = [];
  for (const statement of source.statements) {
    if (
      ts.isExportDeclaration(statement) &&
      statement.exportClause &&
      ts.isNamedExports(statement.exportClause)
    )
      names.push(...statement.exportClause.elements.map((e) => e.name.text));
    else if (!isExported(statement)) continue;
    else if (ts.isVariableStatement(statement))
      names.push(...statement.declarationList.declarations.flatMap((d) => bindingNames(d.name)));
    else if (
      (ts.isFunctionDeclaration(statement) ||
        ts.isClassDeclaration(statement) ||
        ts.isInterfaceDeclaration(statement) ||
        ts.isTypeAliasDeclaration(statement) ||
        ts.isEnumDeclaration(statement) ||
        ts.isModuleDeclaration(statement)) &&
      statement.name &&
      ts.isIdentifier(statement.name)
    )
      names.push(statement.name.text);
  }
  return names;
}

function main(): void {
  const problems: string[] = [];
  for (const root of ROOTS.filter((r) => existsSync(r)))
    for (const file of sourceFiles(root)) {
      for (const segment of file.split('/').slice(root.split('/').length)) {
        const why = issueNumberIn(segment.replace(/\.[^.]*$/, ''));
        if (why) problems.push(`${file}: the name "${segment}": ${why}`);
      }
      if (!/\.(ts|tsx|js|mjs|cjs)$/.test(file)) continue;
      for (const name of exportedNames(file, readFileSync(file, 'utf8'))) {
        const why = issueNumberIn(name);
        if (why) problems.push(`${file}: the export "${name}": ${why}`);
      }
    }
  const unique = [...new Set(problems)];
  if (unique.length > 0) {
    console.error(
      `names: ${unique.length} name(s) read as issue numbers; name them by what they do (STYLE.md), or, if the ` +
        `letters before the digits are a version, algorithm or size prefix, add them to KNOWN_PREFIXES in ` +
        `scripts/check-names.ts\n${unique.join('\n')}`,
    );
    process.exit(1);
  }
}

// Run as a script (`npm run lint`); imported (the unit test of the rule), it only exports.
if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) main();
