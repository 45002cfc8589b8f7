/**
 * An app whose tool needs the user's OAuth2 consent (authorization code with PKCE), against the local provider of
 * this folder, offline with a scripted model:
 *
 *   export OAUTH_CLIENT_SECRET=$(openssl rand -hex 16)
 *   node --import tsx examples/oauth2/fake-provider.ts --port 4000 &
 *   npx agentloom dev --apps examples/oauth2/calendar-app.ts
 *
 * The client secret and the token URL are the deployment's (here, the environment): never shown to a user, never
 * stored in an event. OAUTH_PROVIDER_URL changes where the provider is (default http://127.0.0.1:4000). The same app
 * in YAML: calendar-app.yaml, with the tool and the model of calendar-tools.ts.
 */
import { FunctionTool, LlmAgent, type AppDefinition } from '../../src/index.js';
import { calendarModel, listEventsOptions, provider } from './calendar-tools.js';

const clientSecret = process.env.OAUTH_CLIENT_SECRET;
if (!clientSecret) {
  throw new Error('set OAUTH_CLIENT_SECRET to the secret the provider accepts (the same for both processes)');
}

const listEvents = new FunctionTool({
  ...listEventsOptions,
  auth: {
    authScheme: {
      type: 'oauth2',
      flows: {
        authorizationCode: {
          authorizationUrl: `${provider}/authorize`,
          tokenUrl: `${provider}/token`,
          scopes: { 'calendar.read': 'read your calendar' },
        },
      },
    },
    rawAuthCredential: {
      authType: 'oauth2',
      oauth2: { clientId: process.env.OAUTH_CLIENT_ID ?? 'calendar-app', clientSecret },
    },
    credentialKey: 'calendar',
  },
});

export const apps: AppDefinition[] = [
  { name: 'calendar', agent: new LlmAgent({ name: 'assistant', model: calendarModel, tools: [listEvents] }) },
];
