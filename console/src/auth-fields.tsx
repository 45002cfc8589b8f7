/**
 * The answer to a call that waits for the run's user's credential (kind `auth`, issue 21): what it asks for (the
 * scheme and the credential key, never a secret), and the fields that answer it — an API key or a bearer token in
 * a password field, a username and password for HTTP basic, and for OAuth2 a link to the provider's consent page
 * plus a field for the address the provider sent back (or an access token, when there is no consent page).
 *
 * A typed secret lives only in an input's value (a DOM property, not an attribute: it is not in the page's HTML)
 * and in the request that sends it; it is cleared once the answer is stored and never shown as text.
 */
import { useState } from 'preact/hooks';

/** The scheme a tool declares (ADK's / OpenAPI's security scheme), as much of it as the form needs. */
interface AuthScheme {
  type?: string;
  in?: string;
  name?: string;
  scheme?: string;
  bearerFormat?: string;
  description?: string;
  flows?: { authorizationCode?: { scopes?: Record<string, string> } };
}

/** What a pending call of kind `auth` carries: `{authScheme, credentialKey, authorizationUrl?}`. */
interface AuthAsk {
  scheme: AuthScheme;
  credentialKey?: string;
  /** The provider's consent page (OAuth2 authorization code); only an http(s) address is ever linked. */
  authorizationUrl?: string;
}

function authAsk(auth: Record<string, unknown>): AuthAsk {
  const scheme = (
    typeof auth.authScheme === 'object' && auth.authScheme !== null ? auth.authScheme : {}
  ) as AuthScheme;
  const url = typeof auth.authorizationUrl === 'string' ? auth.authorizationUrl : undefined;
  return {
    scheme,
    ...(typeof auth.credentialKey === 'string' ? { credentialKey: auth.credentialKey } : {}),
    ...(url && /^https?:\/\//i.test(url) ? { authorizationUrl: url } : {}),
  };
}

/** What the scheme asks for, in words. */
function describeScheme(scheme: AuthScheme): string {
  if (scheme.type === 'apiKey')
    return `an API key${scheme.in && scheme.name ? `, sent in the ${scheme.in} ${scheme.name}` : ''}`;
  if (scheme.type === 'http' && scheme.scheme === 'basic') return 'HTTP basic: a username and a password';
  if (scheme.type === 'http')
    return `an HTTP bearer token${scheme.bearerFormat ? ` (${scheme.bearerFormat})` : ''}`;
  if (scheme.type === 'oauth2') {
    const scopes = Object.keys(scheme.flows?.authorizationCode?.scopes ?? {});
    return `OAuth2 consent${scopes.length > 0 ? ` for ${scopes.join(', ')}` : ''}`;
  }
  return `a credential of type ${String(scheme.type)}`;
}

/** The text of a field; the error names it when it is empty. */
function filled(value: string, what: string): string {
  if (value.trim() === '') throw new Error(`${what} is required`);
  return value;
}

/** A field for a secret: masked, never autofilled nor spell-checked (which would send it to a dictionary). */
function SecretInput(props: { id: string; value: string; onInput(value: string): void }) {
  return (
    <input
      id={props.id}
      type="password"
      autocomplete="off"
      spellcheck={false}
      value={props.value}
      onInput={(e) => props.onInput(e.currentTarget.value)}
    />
  );
}

/**
 * The fields of a credential answer and its button. `onAnswer` sends the response and resolves to true when it was
 * stored; the fields are cleared then.
 */
export function AuthFields(props: {
  auth: Record<string, unknown>;
  fieldId(name: string): string;
  busy: boolean;
  onAnswer(answer: () => Record<string, unknown>): Promise<boolean>;
}) {
  const ask = authAsk(props.auth);
  const { scheme } = ask;
  const [secret, setSecret] = useState('');
  const [username, setUsername] = useState('');
  const [callbackUrl, setCallbackUrl] = useState('');
  const basic = scheme.type === 'http' && scheme.scheme === 'basic';
  const consent = scheme.type === 'oauth2' && ask.authorizationUrl !== undefined;

  /** The response ADK's `adk_request_credential` call is answered with, for this scheme. */
  function response(): Record<string, unknown> {
    if (scheme.type === 'apiKey')
      return { exchangedAuthCredential: { authType: 'apiKey', apiKey: filled(secret, 'The key') } };
    if (basic) {
      const credentials = { username: filled(username, 'Username'), password: filled(secret, 'Password') };
      return { exchangedAuthCredential: { authType: 'http', http: { scheme: 'basic', credentials } } };
    }
    if (scheme.type === 'http') {
      const credentials = { token: filled(secret, 'The token') };
      return { exchangedAuthCredential: { authType: 'http', http: { scheme: 'bearer', credentials } } };
    }
    if (consent) {
      const url = filled(callbackUrl, 'The callback URL').trim();
      if (!URL.canParse(url))
        throw new Error('The callback URL must be the whole address the provider sent you to');
      return { authResponseUri: url };
    }
    const accessToken = filled(secret, 'The access token');
    return { exchangedAuthCredential: { authType: 'oauth2', oauth2: { accessToken } } };
  }

  async function submit(): Promise<void> {
    if (await props.onAnswer(response)) {
      setSecret('');
      setUsername('');
      setCallbackUrl('');
    }
  }

  const secretLabel =
    scheme.type === 'apiKey'
      ? `Key${scheme.in && scheme.name ? ` (sent in ${scheme.in} ${scheme.name})` : ''}`
      : basic
        ? 'Password'
        : scheme.type === 'http'
          ? 'Token (sent as Authorization: Bearer)'
          : 'Access token';
  return (
    <>
      <dl class="facts">
        <dt>Needs</dt>
        <dd>{describeScheme(scheme)}</dd>
        {ask.credentialKey && (
          <>
            <dt>Stored as</dt>
            <dd>
              <code>{ask.credentialKey}</code> (for this run's user)
            </dd>
          </>
        )}
        {scheme.description && (
          <>
            <dt>About</dt>
            <dd>{scheme.description}</dd>
          </>
        )}
      </dl>
      {consent ? (
        <>
          <p class="hint">
            Authorize on the provider's page (a new tab); the run resumes by itself when the provider sends
            you back. If it sends you to an address that does not answer, paste that address here.
          </p>
          <a href={ask.authorizationUrl} target="_blank" rel="noopener noreferrer">
            Authorize
          </a>
          <label for={props.fieldId('callback')}>Callback URL</label>
          <input
            id={props.fieldId('callback')}
            type="url"
            autocomplete="off"
            spellcheck={false}
            value={callbackUrl}
            onInput={(e) => setCallbackUrl(e.currentTarget.value)}
          />
        </>
      ) : (
        <>
          {basic && (
            <>
              <label for={props.fieldId('username')}>Username</label>
              <input
                id={props.fieldId('username')}
                autocomplete="off"
                spellcheck={false}
                value={username}
                onInput={(e) => setUsername(e.currentTarget.value)}
              />
            </>
          )}
          <label for={props.fieldId('secret')}>{secretLabel}</label>
          <SecretInput id={props.fieldId('secret')} value={secret} onInput={setSecret} />
        </>
      )}
      <div class="buttons">
        {/* A submit button: Enter in a field clicks it (the form itself only prevents the page's navigation). */}
        <button type="submit" class="approve" disabled={props.busy} onClick={() => void submit()}>
          {consent ? 'Send callback URL' : 'Save credential'}
        </button>
      </div>
    </>
  );
}
