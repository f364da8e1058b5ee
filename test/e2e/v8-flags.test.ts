import { execFileSync } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
// @ts-expect-error plain ESM script without type declarations
import { v8Flags } from "../../scripts/v8-flags.mjs";

const script = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../scripts/v8-flags.mjs");

describe("scripts/v8-flags.mjs (the V8 flags of npm start and the Docker image)", () => {
  it("keeps less heap above what is live by default, and adds single-threaded GC only on one CPU", () => {
    expect(v8Flags({}, 16)).toBe("--max-semi-space-size=8 --heap-growing-percent=25");
    expect(v8Flags({}, 1)).toBe("--max-semi-space-size=8 --heap-growing-percent=25 --single-threaded-gc");
  });

  it("leaves the young generation to an operator's NODE_OPTIONS, and DEER_FLOW_V8_FLAGS replaces the list", () => {
    expect(v8Flags({ NODE_OPTIONS: "--max-old-space-size=1536 --max-semi-space-size=64" }, 4)).toBe("--heap-growing-percent=25");
    expect(v8Flags({ DEER_FLOW_V8_FLAGS: "" }, 1)).toBe("");
    expect(v8Flags({ DEER_FLOW_V8_FLAGS: " --heap-growing-percent=50 " }, 1)).toBe("--heap-growing-percent=50");
  });

  it("prints flags node accepts, as the start script runs it", () => {
    const env = { ...process.env };
    delete env.DEER_FLOW_V8_FLAGS;
    delete env.NODE_OPTIONS;
    const printed = execFileSync(process.execPath, [script], { env, encoding: "utf8" });
    expect(printed).toMatch(/^--max-semi-space-size=8 --heap-growing-percent=25( --single-threaded-gc)?$/);
    // node starts with them (an unknown or misspelt V8 flag would make it exit with "bad option").
    const out = execFileSync(process.execPath, [...printed.split(" "), "-e", "process.stdout.write(String(require('v8').getHeapStatistics().heap_size_limit > 0))"], { env, encoding: "utf8" });
    expect(out).toBe("true");
  });
});
