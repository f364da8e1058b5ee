// Pushes config reloads as soon as the file changes (the request path still checks the signature itself).
import { watch, type FSWatcher } from "chokidar";
import path from "node:path";
import { getAppConfig } from "./app-config.js";

/**
 * Watches the directory of `configPath` and calls `getAppConfig()` when the file is written, replaced by an
 * atomic rename, or deleted, so `config reloaded` (or the error, once per distinct failure) is logged without
 * waiting for a request.
 * @returns the chokidar watcher; call `close()` on shutdown.
 */
export function watchAppConfig(configPath: string): FSWatcher {
  const file = path.resolve(configPath);
  const watcher = watch(path.dirname(file), {
    ignoreInitial: true,
    depth: 0,
    awaitWriteFinish: { stabilityThreshold: 100, pollInterval: 20 },
  });
  const onEvent = (changed: string) => {
    if (path.resolve(changed) !== file) return;
    try {
      getAppConfig();
    } catch {
      // Nothing was ever loaded, so there is nothing to keep serving; the next request retries and reports it.
    }
  };
  watcher.on("add", onEvent).on("change", onEvent).on("unlink", onEvent);
  return watcher;
}
