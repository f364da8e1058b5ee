// extensions_config.json as an agent build reads it (DeerFlow re-reads it from disk per build).
import { EMPTY_EXTENSIONS_CONFIG, parseExtensionsConfigText, resolveExtensionsConfigPath, type ExtensionsConfig } from "../config/extensions-config.js";
import { WatchedFile } from "../config/watched-file.js";
import { getLogger } from "../logger.js";

const file = new WatchedFile<ExtensionsConfig>({
  parse: (text, path) => parseExtensionsConfigText(text, path),
  onFailure: (message) => getLogger().warn({ err: message }, `extensions config cannot be used; keeping the last good one: ${message}`),
  fallback: EMPTY_EXTENSIONS_CONFIG,
});

/**
 * The extensions config for one agent build. The file is read on every call (it changes independently of
 * config.yaml: skill toggles, MCP edits, other processes) and parsed again only when its content signature
 * changes. No file gives the empty config. A file that cannot be read or parsed keeps the last good config (the
 * empty one if there never was one), and the error is logged once per distinct failure, so a broken edit neither
 * fails runs nor drops the MCP tools in use. Never throws.
 */
export function readExtensionsForBuild(): ExtensionsConfig {
  let path: string | null;
  try {
    path = resolveExtensionsConfigPath();
  } catch (err) {
    return file.fail(err);
  }
  return path ? file.read(path) : structuredClone(EMPTY_EXTENSIONS_CONFIG);
}
