// Defaults for the provider variables the shipped config.yaml references, applied by the server entry point so
// that every way of starting it (`npm start`, `npm run dev`, `node --import tsx src/server.ts`, the Docker image)
// behaves the same on a fresh clone.

/** Provider variables the shipped config references, and the value each gets when it is unset. */
export const PROVIDER_ENV_DEFAULTS: Readonly<Record<string, string>> = Object.freeze({
  // Empty: the offline scripted model works without a key; an OpenAI-compatible model then fails with the
  // provider's own "missing key" error rather than the gateway refusing to start.
  OPENAI_API_KEY: "",
  OPENAI_BASE_URL: "https://api.openai.com/v1",
});

/**
 * Sets each {@link PROVIDER_ENV_DEFAULTS} variable that is unset (`OPENAI_BASE_URL` also when empty) in `env`.
 * Other `$VAR`s in the config stay strict: an unset one still stops the start naming it.
 * @returns the names that were defaulted.
 */
export function applyProviderEnvDefaults(env: NodeJS.ProcessEnv = process.env): string[] {
  const applied: string[] = [];
  for (const [name, value] of Object.entries(PROVIDER_ENV_DEFAULTS)) {
    const current = env[name];
    if (current === undefined || (name === "OPENAI_BASE_URL" && !current.trim())) {
      env[name] = value;
      applied.push(name);
    }
  }
  return applied;
}
