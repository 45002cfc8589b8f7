// `node --import ./test/support/processes/record-modules.mjs …`: appends the URL of every module the process resolves to the
// file named by $MODULE_LOG (what a module-graph test reads).
import { register } from 'node:module';

register(
  'data:text/javascript,' +
    encodeURIComponent(`
import { appendFileSync } from 'node:fs';
export async function resolve(specifier, context, next) {
  const result = await next(specifier, context);
  appendFileSync(process.env.MODULE_LOG, result.url + '\\n');
  return result;
}`),
);
