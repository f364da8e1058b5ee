// The environment variables the research tools' providers read (their usual API key variables, e.g.
// JINA_API_KEY, TAVILY_API_KEY): only src/config/ reads process.env, so providers get this reader passed in.

/**
 * The value of an environment variable a web provider documents as its key, or undefined when unset or empty.
 * @param name the variable name (e.g. `JINA_API_KEY`).
 */
export function readProviderEnv(name: string, env: NodeJS.ProcessEnv = process.env): string | undefined {
  const value = env[name];
  return value && value.trim() ? value : undefined;
}
