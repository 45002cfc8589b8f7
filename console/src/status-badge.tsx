/** A run's or a node's status as a coloured word. */
export function StatusBadge({ status }: { status: string }) {
  return <span class={`status status-${status}`}>{status}</span>;
}
