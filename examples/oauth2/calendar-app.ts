/**
 * An app whose tool needs the user's OAuth2 consent (authorization code with PKCE), against the local provider of
 * this folder, offline with a scripted model:
 *
 *   export OAUTH_CLIENT_SECRET=$(openssl rand -hex 16)
 *   node --import tsx examples/oauth2/fake-provider.ts --port 4000 &
 *   npx agentloom dev --apps examples/oauth2/calendar-app.ts
 *
 * The client secret and the token URL are the deployment's (here, the environment): never shown to a user, never
 * stored in an event. OAUTH_PROVIDER_URL changes where the provider is (default http://127.0.0.1:4000).
 */
import { FunctionTool, LlmAgent, ScriptedModel, type AppDefinition } from '../../src/index.js';

const provider = process.env.OAUTH_PROVIDER_URL ?? 'http://127.0.0.1:4000';
const clientSecret = process.env.OAUTH_CLIENT_SECRET;
if (!clientSecret) {
  throw new Error('set OAUTH_CLIENT_SECRET to the secret the provider accepts (the same for both processes)');
}

const listEvents = new FunctionTool({
  name: 'list_events',
  description: "Today's events in the user's calendar",
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
  execute: async (_args, ctx) => {
    const token = ctx.credential?.authType === 'oauth2' ? ctx.credential.oauth2.accessToken : '';
    const response = await fetch(`${provider}/resource`, { headers: { authorization: `Bearer ${token}` } });
    if (!response.ok) return { error: `the calendar answered ${response.status}` };
    return { events: ['09:30 stand-up', '14:00 design review'] };
  },
});

const model = new ScriptedModel({
  respond: (turn) => {
    if (turn.callIndex === 0) return { functionCalls: [{ name: 'list_events', args: {} }] };
    const result = turn.contents.at(-1)?.parts.find((p) => p.functionResponse)?.functionResponse?.response;
    const events = (result as { events?: string[] } | undefined)?.events;
    return events
      ? `Today: ${events.join('; ')}.`
      : `I could not read the calendar: ${JSON.stringify(result)}`;
  },
});

export const apps: AppDefinition[] = [
  { name: 'calendar', agent: new LlmAgent({ name: 'assistant', model, tools: [listEvents] }) },
];
