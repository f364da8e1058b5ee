// The "this is a validated AppConfig" mark, in a module with no imports so the SDK layer (run context, tools) can
// recognise a config object without loading the config schema or its loader. It names no AppConfig type either:
// the schema imports this module, so a type import back would close a cycle; `isAppConfig` (schema.ts) narrows.
const APP_CONFIG_BRAND = Symbol.for("deerflow-gateway.AppConfig");

/** Marks a validated config object so {@link hasAppConfigBrand} can recognise it (non-enumerable, never serialised). */
export function brandAppConfig<T extends object>(config: T): T {
  Object.defineProperty(config, APP_CONFIG_BRAND, { value: true, enumerable: false });
  return config;
}

/** True for a config produced by `parseAppConfig` / the config loader (DeerFlow's "real AppConfig instance" check). */
export function hasAppConfigBrand(value: unknown): boolean {
  return typeof value === "object" && value !== null && (value as Record<symbol, unknown>)[APP_CONFIG_BRAND] === true;
}
