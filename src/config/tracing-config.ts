// Port of DeerFlow config/tracing_config.py: tracing is configured by environment variables only.

const TRUTHY = new Set(["1", "true", "yes", "on"]);

/** One tracing provider's settings. `enabled` means flagged on *and* credentials present. */
export interface TracingProviderConfig {
  /** The provider's flag variable is on. */
  flagged: boolean;
  /** Flagged and its credentials are set. */
  enabled: boolean;
}

/** LangSmith settings (`LANGSMITH_*`, with the `LANGCHAIN_*` spellings as fallbacks). */
export interface LangSmithConfig extends TracingProviderConfig {
  project: string;
  endpoint: string;
}

/** Langfuse settings (`LANGFUSE_*`). */
export interface LangfuseConfig extends TracingProviderConfig {
  publicKey: string | null;
  secretKey: string | null;
  baseUrl: string;
}

/** Both providers. */
export interface TracingConfig {
  langsmith: LangSmithConfig;
  langfuse: LangfuseConfig;
}

const first = (env: NodeJS.ProcessEnv, keys: string[]) => {
  for (const k of keys) {
    const v = env[k]?.trim();
    if (v) return v;
  }
  return null;
};
const flag = (value: string | null) => value !== null && TRUTHY.has(value.toLowerCase());

/**
 * Reads the tracing settings (DeerFlow `get_tracing_config`): LangSmith is flagged by the first non-empty of
 * `LANGSMITH_TRACING`, `LANGCHAIN_TRACING_V2`, `LANGCHAIN_TRACING` being `1/true/yes/on` (any case), its key is
 * `LANGSMITH_API_KEY` / `LANGCHAIN_API_KEY`, project `LANGSMITH_PROJECT` / `LANGCHAIN_PROJECT` (default
 * `deer-flow`), endpoint `LANGSMITH_ENDPOINT` / `LANGCHAIN_ENDPOINT` (default `https://api.smith.langchain.com`).
 * Langfuse is flagged by `LANGFUSE_TRACING` and needs `LANGFUSE_PUBLIC_KEY` and `LANGFUSE_SECRET_KEY`; base URL
 * `LANGFUSE_BASE_URL` (default `https://cloud.langfuse.com`). Cheap: call it per build.
 */
export function readTracingConfig(env: NodeJS.ProcessEnv = process.env): TracingConfig {
  const lsFlagged = flag(first(env, ["LANGSMITH_TRACING", "LANGCHAIN_TRACING_V2", "LANGCHAIN_TRACING"]));
  const lsKey = first(env, ["LANGSMITH_API_KEY", "LANGCHAIN_API_KEY"]);
  const publicKey = first(env, ["LANGFUSE_PUBLIC_KEY"]);
  const secretKey = first(env, ["LANGFUSE_SECRET_KEY"]);
  const lfFlagged = flag(first(env, ["LANGFUSE_TRACING"]));
  return {
    langsmith: {
      flagged: lsFlagged,
      enabled: lsFlagged && lsKey !== null,
      project: first(env, ["LANGSMITH_PROJECT", "LANGCHAIN_PROJECT"]) ?? "deer-flow",
      endpoint: first(env, ["LANGSMITH_ENDPOINT", "LANGCHAIN_ENDPOINT"]) ?? "https://api.smith.langchain.com",
    },
    langfuse: {
      flagged: lfFlagged,
      enabled: lfFlagged && publicKey !== null && secretKey !== null,
      publicKey,
      secretKey,
      baseUrl: first(env, ["LANGFUSE_BASE_URL", "LANGFUSE_HOST"]) ?? "https://cloud.langfuse.com",
    },
  };
}
