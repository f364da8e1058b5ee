// The process logger (pino). Fastify uses the same instance, so request logs and module logs share one stream.
import { createRequire } from "node:module";
import { pino, type Logger } from "pino";

/** Whether pino-pretty can be loaded (it may be pruned from a production install). */
function hasPinoPretty(): boolean {
  try {
    createRequire(import.meta.url).resolve("pino-pretty");
    return true;
  } catch {
    return false;
  }
}

/**
 * Creates the root logger: JSON lines on stdout, pretty-printed only when stdout is a TTY (and pino-pretty is
 * installed). Secrets are redacted by path (`api_key`, `apiKey`, `authorization` headers).
 * @param level pino level name (`info`, `debug`, ...).
 */
export function createLogger(level = "info"): Logger {
  const pretty = Boolean(process.stdout.isTTY) && process.env.NODE_ENV !== "production" && hasPinoPretty();
  return pino({
    level,
    redact: { paths: ["*.api_key", "*.apiKey", "req.headers.authorization", "*.headers.authorization"], censor: "[redacted]" },
    ...(pretty ? { transport: { target: "pino-pretty", options: { colorize: true, translateTime: "SYS:HH:MM:ss.l" } } } : {}),
  });
}

let root: Logger = pino({ level: process.env.LOG_LEVEL ?? (process.env.VITEST ? "silent" : "info") });

/** The shared root logger (silent under vitest unless `LOG_LEVEL` is set). */
export function getLogger(): Logger {
  return root;
}

/** Replaces the shared root logger (the server installs its configured logger at start-up). */
export function setLogger(logger: Logger): void {
  root = logger;
}
