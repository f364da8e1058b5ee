// Layers the code must keep (SDK core and building blocks below the app layer, routes above src/): reads every import of src/ and routes/ and fails on an edge
// that crosses a layer the wrong way. A new file is covered automatically by the folder it lives in.
import { readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

function walk(dir: string): string[] {
  return readdirSync(path.join(ROOT, dir)).flatMap((name) => {
    const rel = path.posix.join(dir, name);
    return statSync(path.join(ROOT, rel)).isDirectory() ? walk(rel) : rel.endsWith(".ts") ? [rel] : [];
  });
}

/**
 * Relative imports of a file (static `import`/`export ... from`, and dynamic `import("...")`), resolved to repo
 * paths. With `valueOnly`, `import type` statements (erased at compile time) are skipped.
 */
function importsOf(file: string, valueOnly = false): string[] {
  let text = readFileSync(path.join(ROOT, file), "utf8");
  if (valueOnly) text = text.replace(/^import type [^;]*;$/gms, "");
  const specs = [...text.matchAll(/(?:from\s+|import\s*\(\s*|import\s+)"(\.[^"]+)"/g)].map((m) => m[1]);
  return specs.map((s) => path.posix.normalize(path.posix.join(path.posix.dirname(file), s)).replace(/\.js$/, ".ts"));
}

const FILES = [...walk("src"), ...walk("routes")];

/** The SDK layer: builds agents from plain arguments; knows nothing of the gateway, the lead agent or config files. */
const SDK_CORE = (f: string) =>
  ["src/agents/factory.ts", "src/agents/features.ts", "src/agents/chain.ts", "src/agents/thread-state.ts", "src/agents/thread-state-reducers.ts", "src/agents/run-context.ts", "src/agents/stream-agent.ts", "src/agents/prompt-text.ts"].includes(f) ||
  f.startsWith("src/agents/middlewares/");
/** Building blocks the SDK layer and the app layer share. */
const SHARED_BLOCKS = (f: string) => f.startsWith("src/tools/") || f.startsWith("src/sandbox/") || f.startsWith("src/skills/");

const APP_OR_SERVER = (t: string) => t.startsWith("src/agents/lead-agent/") || t.startsWith("src/runtime/") || t.startsWith("routes/") || t === "src/app.ts" || t === "src/server.ts" || t === "src/gateway.ts";
const CONFIG_LOADER = (t: string) => t === "src/config/app-config.ts" || t === "src/config/watcher.ts";

function violations(select: (f: string) => boolean, forbidden: (t: string) => boolean, valueOnly = false): string[] {
  return FILES.filter(select).flatMap((f) => importsOf(f, valueOnly).filter(forbidden).map((t) => `${f} -> ${t}`));
}

describe("architecture", () => {
  it("finds the source files (the test reads the real tree)", () => {
    expect(FILES).toContain("src/agents/factory.ts");
    expect(FILES).toContain("routes/runs.ts");
    expect(importsOf("src/runtime/run-service.ts")).toContain("src/runtime/worker.ts");
  });

  it("keeps the SDK core free of the lead agent, the runtime, the routes and the config loader", () => {
    expect(violations(SDK_CORE, (t) => APP_OR_SERVER(t) || CONFIG_LOADER(t))).toEqual([]);
  });

  it("keeps the SDK core free of the app config schema at run time (each middleware owns its option schema)", () => {
    expect(violations(SDK_CORE, (t) => t === "src/config/schema.ts", true)).toEqual([]);
  });

  it("keeps tools, sandbox and skills free of the lead agent, the runtime, the routes and the config loader", () => {
    expect(violations(SHARED_BLOCKS, (t) => APP_OR_SERVER(t) || CONFIG_LOADER(t))).toEqual([]);
  });

  it("lets routes import only runtime services, config, auth, errors, the thread file services and each other", () => {
    const allowed = (t: string) =>
      t.startsWith("src/runtime/") || t.startsWith("src/config/") || t.startsWith("src/auth/") || t === "src/errors.ts" || t.startsWith("routes/") ||
      // Thread file services (uploads, artifacts): the routes' storage layer, like the runtime's stores.
      t === "src/sandbox/uploads.ts" || t === "src/sandbox/artifacts.ts";
    expect(violations((f) => f.startsWith("routes/"), (t) => !allowed(t))).toEqual([]);
  });

  it("never lets src/ import routes/ (routes import src, not the reverse), except the app that registers them", () => {
    expect(violations((f) => f.startsWith("src/") && f !== "src/app.ts", (t) => t.startsWith("routes/"))).toEqual([]);
  });

  it("keeps the SDK entry free of the server", () => {
    expect(importsOf("src/index.ts").filter((t) => APP_OR_SERVER(t) && !t.startsWith("src/agents/lead-agent/"))).toEqual([]);
  });

  it("opens every SQLite file through openSqlite (WAL, busy timeout, the bounded page cache)", () => {
    const direct = FILES.filter((f) => f !== "src/runtime/sqlite.ts").flatMap((f) =>
      [...readFileSync(path.join(ROOT, f), "utf8").matchAll(/new Database\(([^)]*)\)/g)].filter((m) => m[1] !== '":memory:"').map((m) => `${f}: ${m[0]}`),
    );
    expect(direct).toEqual([]);
  });
});
