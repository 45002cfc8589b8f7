/**
 * API keys (CONTRACT.md "HTTP API" / Auth): `AGENTLOOM_API_KEYS` lists `name:key[:app1,app2]` entries separated by
 * `;` or whitespace; a request sends `Authorization: Bearer <key>`. Keys are kept only as SHA-256 digests and
 * compared in constant time; a key without an app list sees every app.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { AgentloomError } from '../../core/errors.js';

/** One configured key. */
export interface ApiKey {
  /** Who holds the key: recorded as `createdBy` / `answeredBy` and logged (the key itself never is). */
  name: string;
  /** SHA-256 of the key. */
  digest: Buffer;
  /** The apps the key sees; undefined: all apps. */
  apps: ReadonlySet<string> | undefined;
}

/** The caller of a request, once authenticated. */
export interface Principal {
  name: string;
  apps: ReadonlySet<string> | undefined;
}

const NAME = /^[A-Za-z0-9_.@-]+$/;
const APP = /^[A-Za-z0-9_.-]+$/;

function digest(key: string): Buffer {
  return createHash('sha256').update(key, 'utf8').digest();
}

function configError(message: string, entry: number): AgentloomError {
  return new AgentloomError('CONFIG', `AGENTLOOM_API_KEYS entry ${entry}: ${message}`, {
    details: { field: 'AGENTLOOM_API_KEYS', entry },
  });
}

/**
 * Parses `AGENTLOOM_API_KEYS`. Throws CONFIG naming the entry (by position, never echoing a key) when an entry is
 * malformed, a name repeats, or two names share one key.
 */
export function parseApiKeys(spec: string): ApiKey[] {
  const keys: ApiKey[] = [];
  const entries = spec.split(/[;\s]+/).filter((entry) => entry !== '');
  entries.forEach((entry, index) => {
    const position = index + 1;
    const [name = '', key = '', apps, ...rest] = entry.split(':');
    if (rest.length > 0) {
      throw configError('write name:key or name:key:app1,app2 (a key cannot contain ":")', position);
    }
    if (!NAME.test(name)) throw configError('the name must be letters, digits, _ . @ -', position);
    if (key === '') throw configError(`key of "${name}" is empty`, position);
    let appSet: Set<string> | undefined;
    if (apps !== undefined) {
      const list = apps.split(',').filter((app) => app !== '');
      const bad = list.find((app) => !APP.test(app));
      if (list.length === 0 || bad !== undefined) {
        throw configError(`apps of "${name}" must be a comma-separated list of app names`, position);
      }
      appSet = new Set(list);
    }
    if (keys.some((k) => k.name === name)) throw configError(`the name "${name}" is used twice`, position);
    const d = digest(key);
    if (keys.some((k) => timingSafeEqual(k.digest, d))) {
      throw configError(`"${name}" has the same key as another entry; give each holder its own`, position);
    }
    keys.push({ name, digest: d, apps: appSet });
  });
  return keys;
}

/**
 * Finds the key a request presents. The presented key is hashed and compared with every configured digest
 * (all of them, whatever matches), so the time taken says nothing about which key or how much of it matched.
 */
export function authenticate(
  keys: readonly ApiKey[],
  authorization: string | undefined,
): Principal | undefined {
  const match = /^Bearer +(\S+) *$/i.exec(authorization ?? '');
  const presented = digest(match?.[1] ?? '');
  let found: ApiKey | undefined;
  for (const key of keys) {
    if (timingSafeEqual(key.digest, presented) && match) found ??= key;
  }
  return found && { name: found.name, apps: found.apps };
}

/** Whether a caller may see an app (no principal: auth is off, everything is visible). */
export function canSee(principal: Principal | undefined, app: string): boolean {
  return principal?.apps === undefined || principal.apps.has(app);
}
