/** Small formatting helpers of the console. */

/** "12 s ago", "3 min ago", "2 h ago", "4 d ago". */
export function ago(iso: string | number, now = Date.now()): string {
  const t = typeof iso === 'number' ? iso : Date.parse(iso);
  const s = Math.max(0, Math.round((now - t) / 1000));
  if (s < 60) return `${s} s ago`;
  if (s < 3600) return `${Math.floor(s / 60)} min ago`;
  if (s < 86_400) return `${Math.floor(s / 3600)} h ago`;
  return `${Math.floor(s / 86_400)} d ago`;
}

/** A local date and time with seconds, e.g. 2026-11-25 04:19:03. */
export function when(iso: string | number): string {
  const d = new Date(iso);
  const pad = (n: number) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}

/** Pretty JSON, two spaces. */
export function pretty(value: unknown): string {
  return JSON.stringify(value, null, 2) ?? 'undefined';
}

/** A run id without its `inv_` prefix, cut to a readable length. */
export function shortId(id: string): string {
  const bare = id.replace(/^inv_/, '');
  return bare.length > 8 ? bare.slice(0, 8) : bare;
}

/** What a kind of paused call is called on screen. */
export function kindLabel(kind: string): string {
  return kind === 'confirmation'
    ? 'confirmation'
    : kind === 'long_running'
      ? 'long-running call'
      : kind === 'elicitation'
        ? 'question'
        : kind === 'auth'
          ? 'credential'
          : kind === 'budget'
            ? 'budget'
            : 'in-doubt call';
}
