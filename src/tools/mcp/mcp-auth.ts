/**
 * An MCP toolset's user credential (the auth gate, `McpToolset({ auth })`): the credential a call got becomes the
 * HTTP request's headers (or query parameter) on a connection of its own, and an HTTP 401 from the server is an
 * {@link AuthError} (the engine deletes the credential and asks the user once more).
 */
import { createHash } from 'node:crypto';
import { AuthError } from '../../core/errors.js';
import type { AuthCredential, ToolAuth } from '../auth.js';
import type { McpConnectionOptions, McpHttpConnection } from './mcp-connection.js';

/** The connection a call with `credential` uses: the toolset's, with the credential where the scheme puts it. */
export function connectionWith(
  connection: McpHttpConnection,
  auth: ToolAuth,
  credential: AuthCredential,
): McpHttpConnection {
  const headers = { ...connection.headers };
  let url = connection.url;
  if (credential.authType === 'apiKey' && auth.authScheme.type === 'apiKey') {
    const { in: where, name } = auth.authScheme;
    if (where === 'header') headers[name] = credential.apiKey;
    else if (where === 'cookie') headers.cookie = `${name}=${encodeURIComponent(credential.apiKey)}`;
    else {
      const withKey = new URL(url);
      withKey.searchParams.set(name, credential.apiKey);
      url = withKey.toString();
    }
  } else if (credential.authType === 'http') {
    const { token, username, password } = credential.http.credentials;
    headers.authorization =
      credential.http.scheme === 'bearer'
        ? `Bearer ${token ?? ''}`
        : `Basic ${Buffer.from(`${username ?? ''}:${password ?? ''}`).toString('base64')}`;
  } else if (credential.authType === 'oauth2') {
    headers.authorization = `Bearer ${credential.oauth2.accessToken}`;
  }
  return { ...connection, url, headers };
}

/** A pool key for a connection's options (a digest: the pool never keys on a secret itself). */
export function poolKey(connection: McpConnectionOptions): string {
  return createHash('sha256').update(JSON.stringify(connection)).digest('hex');
}

/** Whether `err` (or its cause) is the server's HTTP 401 (or 403): the credential was refused. */
export function isUnauthorized(err: unknown): boolean {
  for (let e: unknown = err, depth = 0; e && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (code === 401 || code === 403) return true;
  }
  return false;
}

/** The AuthError of a refused call. */
export function refused(server: string, tool: string, cause: unknown): AuthError {
  return new AuthError(`MCP server "${server}" refused the credential for tool "${tool}"`, {
    details: { mcpServer: server, tool },
    cause,
  });
}
