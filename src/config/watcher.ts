// Pushes config reloads as soon as the file changes (the request path still checks the signature itself).
import { watch, type FSWatcher } from "chokidar";
import path from "node:path";
import { getAppConfig, getAppConfigStatus } from "./app-config.js";
import { configStableMs } from "./watched-file.js";

/**
 * Watches the directory of `configPath` and calls `getAppConfig()` when the file is written, replaced by an
 * atomic rename, or deleted, so `config reloaded` (or the error, once per distinct failure) is logged without
 * waiting for a request. A change still inside its stability period is looked at again once that has passed, so
 * the reload (and `/health` leaving `reloading`) does not wait for a request either.
 * @returns the chokidar watcher; call `close()` on shutdown.
 */
export function watchAppConfig(configPath: string): FSWatcher {
  const file = path.resolve(configPath);
  const watcher = watch(path.dirname(file), {
    ignoreInitial: true,
    depth: 0,
    awaitWriteFinish: { stabilityThreshold: 100, pollInterval: 20 },
  });
  let recheck: NodeJS.Timeout | undefined;
  const check = () => {
    clearTimeout(recheck);
    try {
      getAppConfig();
    } catch {
      // Nothing was ever loaded, so there is nothing to keep serving; the next request retries and reports it.
    }
    if (getAppConfigStatus().pending) recheck = setTimeout(check, configStableMs() + 20).unref();
  };
  const onEvent = (changed: string) => {
    if (path.resolve(changed) === file) check();
  };
  watcher.on("add", onEvent).on("change", onEvent).on("unlink", onEvent);
  const close = watcher.close.bind(watcher);
  watcher.close = () => {
    clearTimeout(recheck);
    return close();
  };
  return watcher;
}
