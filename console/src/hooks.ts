/** Hooks of the console: the hash route, and data polled while the tab is visible. */
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import type { ApiError } from './api';

/** The part of the URL after `#`, without it ("/runs/inv_…"); "/" when empty. */
export function useHashRoute(): string {
  const read = () => decodeURI(location.hash.replace(/^#/, '')) || '/';
  const [route, setRoute] = useState(read);
  useEffect(() => {
    const onChange = () => setRoute(read());
    addEventListener('hashchange', onChange);
    return () => removeEventListener('hashchange', onChange);
  }, []);
  return route;
}

/** What {@link usePoll} holds: the last data, the last error (cleared by the next success), and a refresh. */
export interface Polled<T> {
  data: T | undefined;
  error: ApiError | Error | undefined;
  refresh(): Promise<void>;
}

/**
 * Loads `load()` now, then every `intervalMs` while the tab is visible (at once when it becomes visible again), and
 * again whenever `deps` change. A load that ends after a newer one began is dropped.
 */
export function usePoll<T>(load: () => Promise<T>, intervalMs: number, deps: readonly unknown[]): Polled<T> {
  const [data, setData] = useState<T | undefined>(undefined);
  const [error, setError] = useState<ApiError | Error | undefined>(undefined);
  const generation = useRef(0);
  const loadRef = useRef(load);
  loadRef.current = load;

  const refresh = useCallback(async () => {
    const mine = ++generation.current;
    try {
      const next = await loadRef.current();
      if (mine !== generation.current) return;
      setData(next);
      setError(undefined);
    } catch (err) {
      if (mine !== generation.current) return;
      setError(err instanceof Error ? err : new Error(String(err)));
    }
  }, []);

  useEffect(() => {
    setData(undefined);
    void refresh();
    const timer = setInterval(() => {
      if (document.visibilityState === 'visible') void refresh();
    }, intervalMs);
    const onVisible = () => {
      if (document.visibilityState === 'visible') void refresh();
    };
    document.addEventListener('visibilitychange', onVisible);
    return () => {
      clearInterval(timer);
      document.removeEventListener('visibilitychange', onVisible);
      generation.current++;
    };
  }, [intervalMs, ...deps]);

  return { data, error, refresh };
}

/** Re-renders every `ms` (for "12 s ago" labels). */
export function useTick(ms: number): number {
  const [now, setNow] = useState(Date.now());
  useEffect(() => {
    const timer = setInterval(() => setNow(Date.now()), ms);
    return () => clearInterval(timer);
  }, [ms]);
  return now;
}
