// The environment variables the third-party research providers fall back to when their config.yaml entry carries
// no `api_key` / `token` (DeerFlow reads the same names with os.getenv in community/<provider>/tools.py).
// Only src/config/ reads process.env, so the providers ask here.

/** The variable names a provider may fall back to; anything else is refused, so this is not a general env reader. */
export const WEB_PROVIDER_ENV_VARS = [
  "TAVILY_API_KEY",
  "EXA_API_KEY",
  "FIRECRAWL_API_KEY",
  "BRAVE_SEARCH_API_KEY",
  "SERPER_API_KEY",
  "INFOQUEST_API_KEY",
  "BROWSERLESS_TOKEN",
  "CRAWL4AI_API_TOKEN",
] as const;

/** One of {@link WEB_PROVIDER_ENV_VARS}. */
export type WebProviderEnvVar = (typeof WEB_PROVIDER_ENV_VARS)[number];

/**
 * The trimmed value of a provider's key variable, or `undefined` when it is unset or blank (a blank key is no key,
 * as upstream's `env_key.strip()` check). Read at call time, so a key exported after start is picked up.
 * @param name the variable, e.g. `TAVILY_API_KEY`.
 */
export function webProviderEnv(name: WebProviderEnvVar, env: NodeJS.ProcessEnv = process.env): string | undefined {
  const value = env[name]?.trim();
  return value ? value : undefined;
}
