// The "this is a validated AppConfig" mark, in a module with no imports so the SDK layer (run context, tools) can
// recognise a config object without loading the config schema or its loader.
import type { AppConfig } from "./schema.js";

const APP_CONFIG_BRAND = Symbol.for("deerflow-gateway.AppConfig");

/** Marks a validated config object so {@link isAppConfig} can recognise it (non-enumerable, never serialised). */
export function brandAppConfig<T extends object>(config: T): T {
  Object.defineProperty(config, APP_CONFIG_BRAND, { value: true, enumerable: false });
  return config;
}

/** True for a config produced by `parseAppConfig` / the config loader (DeerFlow's "real AppConfig instance" check). */
export function isAppConfig(value: unknown): value is AppConfig {
  return typeof value === "object" && value !== null && (value as Record<symbol, unknown>)[APP_CONFIG_BRAND] === true;
}
