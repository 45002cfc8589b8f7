/**
 * The calendar example's tool and model, registered in code: the YAML app (calendar-app.yaml) names them, and the
 * code app (calendar-app.ts) builds its agent from them. The tool reads the user's calendar with the token the auth
 * gate gives it (`ctx.credential`); which credential it needs is declared by the app — `auth:` in the YAML, the
 * `auth` option in code.
 *
 *   npx agentloom dev --apps examples/oauth2/calendar-app.yaml --registry examples/oauth2/calendar-tools.ts
 *
 * OAUTH_PROVIDER_URL: where the provider is (default http://127.0.0.1:4000).
 */
import { FunctionTool, ScriptedModel, type ToolContext } from '../../src/index.js';

/** Where the example's provider (fake-provider.ts) listens. */
export const provider = process.env.OAUTH_PROVIDER_URL ?? 'http://127.0.0.1:4000';

/** The tool's options, without `auth` (each app declares it). */
export const listEventsOptions = {
  name: 'list_events',
  description: "Today's events in the user's calendar",
  execute: async (_args: Record<string, unknown>, ctx: ToolContext) => {
    const token = ctx.credential?.authType === 'oauth2' ? ctx.credential.oauth2.accessToken : '';
    const response = await fetch(`${provider}/resource`, { headers: { authorization: `Bearer ${token}` } });
    if (!response.ok) return { error: `the calendar answered ${response.status}` };
    return { events: ['09:30 stand-up', '14:00 design review'] };
  },
};

/** Offline: calls list_events, then says what it returned. */
export const calendarModel = new ScriptedModel({
  respond: (turn) => {
    if (turn.callIndex === 0) return { functionCalls: [{ name: 'list_events', args: {} }] };
    const result = turn.contents.at(-1)?.parts.find((p) => p.functionResponse)?.functionResponse?.response;
    const events = (result as { events?: string[] } | undefined)?.events;
    return events
      ? `Today: ${events.join('; ')}.`
      : `I could not read the calendar: ${JSON.stringify(result)}`;
  },
});

export const tools = { list_events: new FunctionTool(listEventsOptions) };
export const models = { calendar_model: calendarModel };
