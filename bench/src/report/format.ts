/**
 * Formats generated files with the repository's prettier settings, so BENCHMARKS.md and results.json pass
 * `prettier --check .` (the lint step). Prettier is one of agentloom's devDependencies; without it the text is
 * written as is.
 */
export async function formatWithPrettier(text: string, filepath: string): Promise<string> {
  try {
    const prettier = await import('prettier');
    const options = (await prettier.resolveConfig(filepath)) ?? {};
    return await prettier.format(text, { ...options, filepath });
  } catch (err) {
    console.warn(`bench: ${filepath} not formatted (${(err as Error).message})`);
    return text;
  }
}
