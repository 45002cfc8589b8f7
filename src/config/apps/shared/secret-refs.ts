/**
 * Secrets in declarative files: a file never holds one, it names the environment variable that does. Native YAML
 * writes `{ valueFrom: { env: NAME } }`; kagent writes `valueFrom: { type: Secret, name, key }` (read from the
 * variable `key`, as if the Secret were mounted with envFrom — the mapping of ModelConfig's `apiKeySecretKey`).
 *
 * Both are read through one {@link SecretEnv}: a variable missing from the environment is a problem naming it (a
 * process serving the app refuses to start), or a warning under `validate --no-env`. {@link looksLikeSecret} and
 * {@link isSensitiveName} find a secret written in clear: in a field that holds secrets, or pasted where a
 * variable's name belongs.
 */
import type { ConfigProblem, YamlDocument, YamlPath } from './yaml-source.js';

/** What a missing variable is: an error (serving, `validate`) or a warning (`validate --no-env`). */
export type MissingEnv = 'error' | 'warning';

/** How declarative files read their variables. */
export interface EnvOptions {
  /** The environment the variables are read from. Default: this process's. */
  env?: NodeJS.ProcessEnv;
  /** Default 'error'. */
  missingEnv?: MissingEnv;
}

/** The name of an environment variable. */
export const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** Prefixes of well-known credentials (OpenAI, Anthropic, GitHub, GitLab, Slack, Google, AWS, Stripe) and JWTs. */
const KNOWN_SECRET =
  /^(sk-|sk_live_|sk_test_|rk_live_|ghp_|gho_|ghs_|ghu_|github_pat_|glpat-|xox[abposr]-|AIza[\w-]{20,}$|(AKIA|ASIA)[A-Z0-9]{16}$|eyJ[\w-]{8,}\.)/;

/** Bits of entropy per character of `text` (Shannon). */
function entropy(text: string): number {
  const counts = new Map<string, number>();
  for (const c of text) counts.set(c, (counts.get(c) ?? 0) + 1);
  let bits = 0;
  for (const n of counts.values()) bits -= (n / text.length) * Math.log2(n / text.length);
  return bits;
}

/**
 * Whether `value` looks like a credential rather than a name or a setting: a known token prefix, an HTTP
 * `Bearer` / `Basic` credential, or a long random-looking word (20+ characters of mixed case and digits, or hex /
 * base64 of high entropy). A variable name (`OAUTH_CLIENT_SECRET`), a URL and a file path do not.
 */
export function looksLikeSecret(value: string): boolean {
  const text = value.trim();
  if (/^(bearer|basic|token)\s+\S{8,}$/i.test(text)) return true;
  if (KNOWN_SECRET.test(text)) return true;
  // Too short, words, a URL or a file path: a setting, not a credential.
  if (
    text.length < 20 ||
    /\s/.test(text) ||
    /^[a-z]+:\/\//i.test(text) ||
    /^(\.{0,2}|~)\/|^[A-Z]:\\/i.test(text)
  ) {
    return false;
  }
  if (/^[A-Z0-9_]+$/.test(text) && text.includes('_')) return false; // an UPPER_SNAKE name
  if (/^[0-9a-f]{32,}$/i.test(text)) return true; // hex of 16+ random bytes
  const classes = [/[a-z]/, /[A-Z]/, /[0-9]/].filter((r) => r.test(text)).length;
  return (classes === 3 && entropy(text) >= 3.5) || (classes >= 2 && entropy(text) >= 4.2);
}

/** Whether a header or variable named `name` carries a credential (Authorization, X-API-Key, GITHUB_TOKEN, …). */
export function isSensitiveName(name: string): boolean {
  return /^(proxy-)?authorization$|^cookie$|api[-_]?key|token|secret|passw(or)?d|credential|private[-_]?key/i.test(
    name,
  );
}

/** What to write instead of a secret in clear, in native YAML. */
export function envRefHint(example: string): string {
  return `write { valueFrom: { env: ${example} } } and set ${example} in the environment of every process that serves the app`;
}

/** An example variable name for a field (`clientSecret` → CLIENT_SECRET, `Authorization` → AUTHORIZATION). */
export function variableFor(field: string): string {
  const name = field
    .replace(/([a-z0-9])([A-Z])/g, '$1_$2')
    .replace(/[^A-Za-z0-9]+/g, '_')
    .replace(/^_+|_+$/g, '')
    .toUpperCase();
  return ENV_NAME.test(name) ? name : 'MY_SECRET';
}

/** Why `name` cannot name a variable holding a secret, or undefined when it can. */
export function variableNameProblem(name: unknown, key: string, example: string): string | undefined {
  if (typeof name !== 'string' || name === '')
    return `write ${key}: <variable name>, e.g. ${key}: ${example}`;
  if (looksLikeSecret(name)) {
    return `${key} holds what looks like the secret itself: put the secret in an environment variable and write its name here, e.g. ${key}: ${example}`;
  }
  if (!ENV_NAME.test(name)) {
    return `"${name}" is not an environment variable name (letters, digits and _, not starting with a digit); write e.g. ${key}: ${example}`;
  }
  return undefined;
}

/** Reads the variables a set of files names, collecting errors (or warnings) for those that are missing. */
export class SecretEnv {
  /** Missing variables under `missingEnv: 'warning'`. */
  readonly warnings: ConfigProblem[] = [];
  private readonly env: NodeJS.ProcessEnv;
  readonly missingEnv: MissingEnv;

  constructor(options: EnvOptions = {}) {
    this.env = options.env ?? process.env;
    this.missingEnv = options.missingEnv ?? 'error';
  }

  /**
   * The value of variable `name`, read for the field at `path` of `source`. Missing (or empty): a problem in
   * `problems` saying `why` the variable is read, and undefined; under `missingEnv: 'warning'` a warning instead,
   * and a stand-in value (`<NAME unset>`) so the app can still be checked.
   */
  read(
    source: YamlDocument,
    path: YamlPath,
    name: string,
    why: string,
    problems: ConfigProblem[],
  ): string | undefined {
    const value = this.value(name);
    if (value !== undefined) return value;
    const message = `the environment has no variable ${name} (${why}): set it`;
    return this.missing(source.problem(path, message), problems) ? `<${name} unset>` : undefined;
  }

  /** The value of variable `name` (undefined when unset or empty), without reporting. */
  value(name: string): string | undefined {
    const value = this.env[name];
    return value === undefined || value === '' ? undefined : value;
  }

  /**
   * Records `problem` (a missing variable) as an error in `problems`, or as a warning; true when it is a warning
   * (the caller goes on with a stand-in value).
   */
  missing(problem: ConfigProblem, problems: ConfigProblem[]): boolean {
    if (this.missingEnv === 'error') {
      problems.push(problem);
      return false;
    }
    this.warnings.push(problem);
    return true;
  }
}
