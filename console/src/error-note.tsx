/** A failed load, said plainly: the API's code and message. */
import { ApiError } from './api';

export function ErrorNote({ error }: { error: Error | undefined }) {
  if (!error) return null;
  const text =
    error instanceof ApiError
      ? `${error.code}: ${error.message}`
      : `The server did not answer (${error.message}).`;
  return (
    <p class="error" role="alert">
      {text}
    </p>
  );
}
