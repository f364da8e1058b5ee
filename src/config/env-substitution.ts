// Port of DeerFlow AppConfig.resolve_env_variables (app_config.py): strict `$VAR` substitution.
import { ConfigError } from "../errors.js";

/**
 * Keys whose values are text shown to clients (`GET /api/models` answers them): never filled from the
 * environment, so a `$HOME` in a description cannot publish a host value (a deliberate departure from DeerFlow,
 * which substitutes every string).
 */
export const LITERAL_TEXT_KEYS: ReadonlySet<string> = new Set(["description", "display_name"]);

/**
 * Replaces every string value that starts with `$` by the environment variable named by the rest of the string
 * (`$OPENAI_API_KEY` -> `process.env.OPENAI_API_KEY`), recursing into mapping values and list items, except the
 * values of {@link LITERAL_TEXT_KEYS}, which stay as written. Keys are never substituted; there is no `${...}`, default or in-string interpolation (`"Bearer $X"` stays literal);
 * non-strings pass through. An empty-but-set variable gives `""`.
 * @param value Parsed YAML tree.
 * @param keyPath Path of `value` in the document, for error messages (e.g. `["models", 0, "api_key"]`).
 * @throws ConfigError naming the variable and the key path when a referenced variable is unset.
 */
export function substituteEnv(value: unknown, env: NodeJS.ProcessEnv = process.env, keyPath: (string | number)[] = []): unknown {
  if (typeof value === "string") {
    if (!value.startsWith("$")) return value;
    const name = value.slice(1);
    const resolved = env[name];
    if (resolved === undefined) {
      throw new ConfigError(`Environment variable ${name} not found for config value ${value} at ${formatKeyPath(keyPath)}`);
    }
    return resolved;
  }
  if (Array.isArray(value)) return value.map((item, i) => substituteEnv(item, env, [...keyPath, i]));
  if (value && typeof value === "object") {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[k] = LITERAL_TEXT_KEYS.has(k) && typeof v === "string" ? v : substituteEnv(v, env, [...keyPath, k]);
    return out;
  }
  return value;
}

/** Formats a key path as `models[0].api_key`. */
export function formatKeyPath(keyPath: readonly PropertyKey[]): string {
  let out = "";
  for (const k of keyPath) out += typeof k === "number" ? `[${k}]` : out ? `.${String(k)}` : String(k);
  return out || "(root)";
}
