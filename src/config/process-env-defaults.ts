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

/** Variables any of which, set to a true value, turns a LangChain tracer on (LangSmith, Langfuse). */
const TRACER_FLAGS = ["LANGSMITH_TRACING", "LANGCHAIN_TRACING_V2", "LANGCHAIN_TRACING", "LANGFUSE_TRACING"];

/**
 * Runs LangChain callback handlers inline (`LANGCHAIN_CALLBACKS_BACKGROUND=false`) unless the variable is set or a
 * tracer is switched on. In the background mode (LangChain's default) every handler event of every run (each
 * chain start, each token) goes through one process-wide queue; the gateway's own handlers and LangGraph's stream
 * handler are synchronous and cheap, so inline costs less: measured -3 to -4% CPU per run under load. A tracer
 * keeps the background mode, where its network work never delays a run (inline, LangSmith waits for each trace's
 * upload at the end of the run).
 * @returns whether the variable was set.
 */
export function applyCallbackEnvDefault(env: NodeJS.ProcessEnv = process.env): boolean {
  if (env.LANGCHAIN_CALLBACKS_BACKGROUND !== undefined) return false;
  if (TRACER_FLAGS.some((name) => /^(1|true|yes|on)$/i.test(env[name]?.trim() ?? ""))) return false;
  env.LANGCHAIN_CALLBACKS_BACKGROUND = "false";
  return true;
}
