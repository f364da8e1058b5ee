// The process logger (pino). Fastify uses the same instance, so request logs and module logs share one stream.
import { createRequire } from "node:module";
import { pino, type DestinationStream, type Logger } from "pino";

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
 * Bytes of log lines held before a write to stdout. A run logs three lines (~1 KB); writing each at once cost
 * ~2.8% of the server's CPU at 64 concurrent runs (a `write` per line on the libuv pool and a thread hand-off),
 * batching ~2 KB cuts the writes ~7x. Lines are never split; several processes sharing one stdout pipe (cluster
 * workers) can still interleave a batch larger than PIPE_BUF, as they could before batching.
 */
export const LOG_BUFFER_BYTES = 2048;

/** pino's numeric level of `warn`: lines at this level and above are written at once. */
const WARN_LEVEL = 40;

/** The most a buffered line waits before it is written, in ms (a quiet server's lines still show up promptly). */
export const LOG_FLUSH_INTERVAL_MS = 500;

/**
 * Creates the root logger: JSON lines on stdout, pretty-printed only when stdout is a TTY (and pino-pretty is
 * installed). Secrets are redacted by path (`api_key`, `apiKey`, `authorization` headers). JSON lines are
 * written in batches of {@link LOG_BUFFER_BYTES}, at the latest every {@link LOG_FLUSH_INTERVAL_MS} (`warn` and
 * above at once) and on exit: pino writes the buffer synchronously on `exit`, so `process.exit` and a crash that
 * unwinds keep the buffered lines (a write still in flight to a stalled stdout pipe can be cut, as without
 * batching); a SIGKILL loses at most the last interval's lines.
 * @param level pino level name (`info`, `debug`, ...).
 */
export function createLogger(level = "info"): Logger {
  const pretty = Boolean(process.stdout.isTTY) && process.env.NODE_ENV !== "production" && hasPinoPretty();
  const options = {
    level,
    redact: { paths: ["*.api_key", "*.apiKey", "req.headers.authorization", "*.headers.authorization"], censor: "[redacted]" },
  };
  if (pretty) return pino({ ...options, transport: { target: "pino-pretty", options: { colorize: true, translateTime: "SYS:HH:MM:ss.l" } } });
  // sonic-boom writes only once minLength bytes are held; the timer bounds how long a line waits. It flushes only
  // after a line was logged (an idle server makes no empty writes) and is unref'd (never keeps the process alive).
  const stream = pino.destination({ dest: 1, sync: false, minLength: LOG_BUFFER_BYTES }) as DestinationStream & { flush(): void; _writing?: boolean };
  let pending = false;
  const flush = () => {
    // A flush while a write is in flight does nothing, and sonic-boom writes what is left after it only once
    // minLength bytes are held: stay pending, so the next tick writes the rest (`_writing` is sonic-boom 4's flag).
    if (!pending || stream._writing) return;
    pending = false;
    try {
      stream.flush();
    } catch {
      // Destroyed (EPIPE on a closed stdout): nothing left to write to.
    }
  };
  setInterval(flush, LOG_FLUSH_INTERVAL_MS).unref();
  return pino(
    {
      ...options,
      hooks: {
        streamWrite: (line: string) => {
          pending = true;
          return line;
        },
        // Warnings and errors go out at once (a start-up warning must not wait in the buffer for a kill).
        logMethod(this: Logger, args: Parameters<Logger["info"]>, method: (...a: Parameters<Logger["info"]>) => void, level: number) {
          method.apply(this, args);
          if (level >= WARN_LEVEL) flush();
        },
      },
    },
    stream,
  );
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
