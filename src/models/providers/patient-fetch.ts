/**
 * The fetch the model adapters hand their SDKs. Node's fetch (undici) gives up on a response whose headers or
 * body take longer than 300 s: a long non-streamed generation would fail and be retried from scratch. Like
 * @google/genai's own default, this fetch turns those undici timeouts off, so a call is bounded by the
 * adapter's per-attempt timeout (`timeoutMs`) only.
 */

/** The fetch signature the SDKs accept. */
export type FetchFunction = (input: string | URL | Request, init?: RequestInit) => Promise<Response>;

const GLOBAL_DISPATCHER = Symbol.for('undici.globalDispatcher.1');

interface UndiciDispatcher {
  dispatch(opts: object, handler: unknown): boolean;
}

/** `base` when given (the caller owns its timeouts), else Node's fetch without undici's 300 s timeouts. */
export function patientFetch(base?: FetchFunction): FetchFunction {
  if (base) return base;
  return (input, init) => {
    const global = (globalThis as Record<symbol, UndiciDispatcher | undefined>)[GLOBAL_DISPATCHER];
    const dispatcher: UndiciDispatcher | undefined = global && {
      dispatch: (opts, handler) => global.dispatch({ ...opts, headersTimeout: 0, bodyTimeout: 0 }, handler),
    };
    return fetch(input, dispatcher ? ({ ...init, dispatcher } as RequestInit) : init);
  };
}
