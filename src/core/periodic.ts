/** A background task on an interval that never overlaps itself: a tick while the last run is still going is skipped. */
export function everyInterval(
  ms: number,
  task: () => Promise<unknown>,
  onError: (err: unknown) => void,
): NodeJS.Timeout {
  let running = false;
  const timer = setInterval(() => {
    if (running) return;
    running = true;
    task()
      .catch(onError)
      .finally(() => (running = false));
  }, ms);
  return timer.unref();
}
