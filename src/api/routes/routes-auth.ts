/**
 * The OAuth2 redirect target (`GET /v1/auth/callback?state&code`): a user's browser lands here from the provider's
 * consent page. It needs no API key (the browser has none): the state, made under the deployment's key and naming
 * one pending call, is the capability, used once. The answer is a small page for the human: 200; 400 saying what
 * is wrong with the redirect (no code, the provider's error, a parameter twice, a state not issued or already
 * used); 502 when the provider's token endpoint could not redeem the code. A refused redirect leaves the call
 * waiting, so its authorization URL works again.
 */
import escapeHTML from 'escape-html';
import { AgentloomError } from '../../core/errors.js';
import type { ApiApp, RouteContext } from '../http/context.js';

/** What a user reads when the code could not be redeemed (the cause is in the log, not on a public page). */
const UNREACHABLE =
  "the OAuth2 provider's token endpoint could not be reached to redeem the code: the call still waits: open its authorization URL again later";

/** The callback's path (also in PUBLIC_ROUTES). */
export const AUTH_CALLBACK = '/v1/auth/callback';

function page(title: string, text: string): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${escapeHTML(title)}</title></head><body><main><h1>${escapeHTML(title)}</h1><p>${escapeHTML(text)}</p></main></body></html>`;
}

/** Registers the OAuth2 callback. */
export function authRoutes(app: ApiApp, ctx: RouteContext): void {
  const { engine } = ctx;
  app.get(AUTH_CALLBACK, {
    // The request line carries the authorization code: not in the request log (refusals are logged below).
    logLevel: 'warn',
    schema: {
      tags: ['invocations'],
      summary:
        'OAuth2 redirect target: redeems the code for the pending `auth` call its state names (single use), and the run goes on',
    },
    handler: async (request, reply) => {
      const query = new URL(request.url, 'http://callback.invalid').searchParams;
      reply
        .header('cache-control', 'no-store')
        .header('referrer-policy', 'no-referrer')
        .type('text/html; charset=utf-8');
      try {
        const { invocationId } = await engine.completeAuthorization(query);
        engine.logger.info({ invocationId }, 'authorization completed by callback');
        return page('Authorized', `The run ${invocationId} goes on. You can close this tab.`);
      } catch (err) {
        if (!(err instanceof AgentloomError)) throw err;
        if (['VALIDATION', 'CONFLICT', 'NOT_FOUND'].includes(err.code)) {
          request.log.warn({ reason: err.message }, 'authorization callback refused');
          return reply.code(400).send(page('Not authorized', err.message));
        }
        // The provider's token endpoint failed (unreachable, or a 5xx): nothing was stored, the state is not spent.
        if (!err.retryable) throw err;
        request.log.warn({ err }, 'authorization callback: the code could not be redeemed');
        return reply.code(502).send(page('Not authorized yet', UNREACHABLE));
      }
    },
  });
}
