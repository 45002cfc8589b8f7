/**
 * The key `agentloom dev` seals users' tool credentials with when AGENTLOOM_SECRET_KEY is unset: a file in its
 * data directory, made on the first start and read on every later one, so credentials stored by one run of `dev`
 * open in the next. `api` and `worker` make no key: a deployment sets AGENTLOOM_SECRET_KEY (see createEngine).
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { AgentloomError } from '../../core/errors.js';
import { MAKE_KEY_HINT, parseSecretKey } from '../../core/secret-box.js';

/** The file in `dev`'s data directory that holds the key it made. */
export const DEV_SECRET_KEY_FILE = 'secret.key';

/**
 * The key in `<dataDir>/secret.key`; when there is none, a new one (32 random bytes, base64, mode 0600) written
 * there and logged once (at warn, `dev`'s level) with where it is. A file that does not hold a key is a CONFIG error
 * naming it; one that others may read is used, with a warning.
 */
export function devSecretKey(dataDir: string, log: Logger): string {
  const path = join(dataDir, DEV_SECRET_KEY_FILE);
  const made = randomBytes(32).toString('base64');
  try {
    mkdirSync(dataDir, { recursive: true });
    // `wx`: never replace a key, even one another `dev` on this directory wrote a moment ago.
    writeFileSync(path, `${made}\n`, { mode: 0o600, flag: 'wx' });
    log.warn(
      { path },
      'made a secret key for stored tool credentials: keep the file (they do not open without it), or set AGENTLOOM_SECRET_KEY',
    );
    return made;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') {
      throw new AgentloomError(
        'CONFIG',
        `cannot write a secret key to ${path} (${(err as Error).message}): pass --data DIR, or set AGENTLOOM_SECRET_KEY (${MAKE_KEY_HINT})`,
        { cause: err, details: { field: 'AGENTLOOM_SECRET_KEY' } },
      );
    }
  }
  const text = readFileSync(path, 'utf8');
  parseSecretKey(text, path);
  if ((statSync(path).mode & 0o077) !== 0) {
    log.warn({ path }, 'the secret key file may be read by other users: chmod 600 it');
  }
  return text.trim();
}
