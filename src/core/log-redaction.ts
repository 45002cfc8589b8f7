/**
 * pino's `redact` option for every logger agentloom creates: a second line of defence behind the rule that secrets
 * are never logged. A field named like a secret (an API key, a token, a password, an OAuth2 client secret, an auth
 * answer, an Authorization header) is replaced by `[redacted]` at the top of a log record and up to three levels
 * down. pino's wildcards match one level each, so each depth is listed.
 */

/** Field names whose value may carry a secret. Exact names (case-sensitive, as the code spells them). */
const SECRET_FIELDS = [
  'apiKey',
  'api_key',
  'token',
  'accessToken',
  'access_token',
  'refreshToken',
  'refresh_token',
  'idToken',
  'id_token',
  'clientSecret',
  'client_secret',
  'password',
  'secret',
  'credential',
  'exchangedAuthCredential',
  'authResponseUri',
  'authorization',
  'cookie',
  'codeVerifier',
  'code_verifier',
] as const;

/**
 * How deep below the record's top a secret field is still found: 3 reaches `functionResponses.0.response.token`
 * and `req.headers.authorization`. Each level adds a wildcard walk to every record logged (tens of µs for a record
 * with an `err`; nothing for a record below the logger's level), so it stops there.
 */
const MAX_DEPTH = 3;

function redactPaths(): string[] {
  const paths: string[] = [];
  for (let depth = 0; depth <= MAX_DEPTH; depth++) {
    const prefix = '*.'.repeat(depth);
    for (const field of SECRET_FIELDS) paths.push(`${prefix}${field}`);
  }
  return paths;
}

/** The `redact` option of agentloom's pino loggers (`pino({ level, redact: LOG_REDACTION })`). */
export const LOG_REDACTION: { readonly paths: string[]; readonly censor: string } = Object.freeze({
  paths: redactPaths(),
  censor: '[redacted]',
});
