import type * as z from 'zod';

/** One line per zod issue: `path: message`, joined with "; ". */
export function zodIssues(error: z.ZodError): string {
  return error.issues
    .map((issue) => `${issue.path.length ? issue.path.join('.') : '(root)'}: ${issue.message}`)
    .join('; ');
}
