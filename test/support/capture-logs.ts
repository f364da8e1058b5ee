// Captures the shared logger's JSON lines for assertions.
import { Writable } from "node:stream";
import { pino } from "pino";
import { getLogger, setLogger } from "../../src/logger.js";

/** Installs a capturing logger; `restore()` puts the previous one back. */
export function captureLogs(): { lines: () => Record<string, any>[]; messages: () => string[]; restore: () => void } {
  const previous = getLogger();
  const out: Record<string, any>[] = [];
  const stream = new Writable({
    write(chunk, _enc, cb) {
      for (const line of String(chunk).split("\n")) if (line.trim()) out.push(JSON.parse(line));
      cb();
    },
  });
  setLogger(pino({ level: "debug" }, stream));
  return { lines: () => out, messages: () => out.map((l) => String(l.msg)), restore: () => setLogger(previous) };
}
