import { execFile } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, describe, expect, it, vi } from "vitest";
import { buildPlan, checkFrontendSource, FrontendSourceError, packageManagerFor } from "../../e2e/web/frontend.js";
import { parseWebappArgs, UsageError } from "../../e2e/web/webapp.js";

// Issue 47 item 7: `npm run webapp -- --frontend <path>` (argument handling, the cache decision, the package
// manager) and `npm run e2e:web` without the frontend source (one line, non-zero). Building the app needs the
// network for its packages, which tests do not have.
vi.setConfig({ testTimeout: 60_000 });

const work = mkdtempSync(path.join(tmpdir(), "webapp-cli-"));
afterAll(() => rmSync(work, { recursive: true, force: true }));

/** A minimal frontend checkout: package.json with `next`, one source file, and `extra` files. */
function checkout(name: string, extra: Record<string, string> = {}): string {
  const dir = path.join(work, name);
  mkdirSync(path.join(dir, "src"), { recursive: true });
  writeFileSync(path.join(dir, "package.json"), JSON.stringify({ name: "deer-flow-frontend", dependencies: { next: "16.0.0" } }));
  writeFileSync(path.join(dir, "src", "page.tsx"), "export default 1;\n");
  for (const [rel, content] of Object.entries(extra)) writeFileSync(path.join(dir, rel), content);
  return dir;
}

const run = promisify(execFile);
/** Runs an npm script's entry the way `npm run` does; resolves to its exit code and output. */
async function script(file: string, args: string[], env: Record<string, string> = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, ["--import", "tsx", file, ...args], { env: { ...process.env, ...env }, cwd: path.resolve(".") });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

describe("npm run webapp: arguments", () => {
  it("reads --frontend, --port, --host, --cache and --check, in both spellings, with defaults", () => {
    const o = parseWebappArgs(["--frontend", "/src/fe", "--port=8080", "--host", "0.0.0.0", "--cache", "/c", "--check"], {});
    expect(o).toEqual({ frontend: "/src/fe", port: 8080, host: "0.0.0.0", cacheRoot: "/c", checkOnly: true });
    const d = parseWebappArgs([], { DEER_FLOW_FRONTEND_DIR: "/env/fe", PORT: "4000", DEER_FLOW_E2E_CACHE: "/ec" });
    expect(d).toEqual({ frontend: "/env/fe", port: 4000, host: "127.0.0.1", cacheRoot: "/ec", checkOnly: false });
    expect(parseWebappArgs(["--frontend", "x"], {}).port).toBe(3000);
  });

  it.each([
    [[], /--frontend is required/],
    [["--frontend"], /--frontend needs a value/],
    [["--frontend", "--port", "1"], /--frontend needs a value/],
    [["--frontend", "x", "--port", "70000"], /--port must be 1-65535, got '70000'/],
    [["--frontend", "x", "--port", "12ab"], /--port must be 1-65535/],
    [["--frontend", "x", "--verbose"], /unknown argument '--verbose'/],
  ])("refuses %j", (argv, message) => {
    expect(() => parseWebappArgs(argv, {})).toThrow(UsageError);
    expect(() => parseWebappArgs(argv, {})).toThrow(message);
  });
});

describe("npm run webapp: the build cache and the package manager", () => {
  it("reuses a build only for the same source: a changed file is a new key, node_modules and .next are not source", () => {
    const dir = checkout("cache-app");
    const cache = path.join(work, "cache");
    const first = buildPlan(dir, cache);
    expect(first).toEqual({ key: expect.stringMatching(/^[0-9a-f]{16}$/), appDir: path.join(cache, first.key), cached: false });
    mkdirSync(path.join(first.appDir, ".next"), { recursive: true });
    writeFileSync(path.join(first.appDir, ".next", "BUILD_ID"), "b1");
    expect(buildPlan(dir, cache).cached).toBe(true);
    mkdirSync(path.join(dir, "node_modules", "x"), { recursive: true });
    writeFileSync(path.join(dir, "node_modules", "x", "index.js"), "1");
    mkdirSync(path.join(dir, ".next"), { recursive: true });
    writeFileSync(path.join(dir, ".next", "BUILD_ID"), "local");
    expect(buildPlan(dir, cache)).toEqual({ ...first, cached: true });
    writeFileSync(path.join(dir, "src", "page.tsx"), "export default 2;\n");
    const changed = buildPlan(dir, cache);
    expect(changed.key).not.toBe(first.key);
    expect(changed.cached).toBe(false);
  });

  it("installs with pnpm (the packageManager's version, or a pnpm lockfile), else npm ci with a lockfile, else npm install", () => {
    expect(packageManagerFor(checkout("pm-pnpm", { "package.json": JSON.stringify({ packageManager: "pnpm@10.26.2" }) })).install).toEqual(["npx", ["-y", "pnpm@10.26.2", "install", "--frozen-lockfile"]]);
    expect(packageManagerFor(checkout("pm-lock", { "pnpm-lock.yaml": "" })).build).toEqual(["npx", ["-y", "pnpm@10", "build"]]);
    expect(packageManagerFor(checkout("pm-npm", { "package-lock.json": "{}" }))).toEqual({ install: ["npm", ["ci"]], build: ["npm", ["run", "build"]] });
    expect(packageManagerFor(checkout("pm-none")).install).toEqual(["npm", ["install"]]);
  });

  it("names what it needs when the folder is missing or is not the web app", () => {
    expect(() => checkFrontendSource(path.join(work, "missing"), "hint")).toThrow(FrontendSourceError);
    const other = path.join(work, "other");
    mkdirSync(other);
    writeFileSync(path.join(other, "package.json"), "{}");
    expect(() => checkFrontendSource(other, "hint")).toThrow(/is not the DeerFlow web app \(its package.json has no "next" dependency\); hint$/);
    expect(checkFrontendSource(checkout("ok-app"), "hint")).toBe(path.join(work, "ok-app"));
  });
});

describe("the commands' error paths", () => {
  it("npm run e2e:web without the frontend source says so in one line and exits non-zero", async () => {
    const missing = path.join(work, "no-frontend");
    const res = await script("e2e/web/run.ts", [], { DEER_FLOW_FRONTEND_DIR: missing });
    expect(res.code).not.toBe(0);
    expect(res.stderr.trim().split("\n")).toEqual([
      `npm run e2e:web needs the DeerFlow web app's source (the frontend/ folder of a deer-flow checkout): ${missing} has no package.json; set DEER_FLOW_FRONTEND_DIR=<path to deer-flow/frontend>`,
    ]);
    expect(res.stderr).not.toContain("ENOENT");
  });

  it("npm run webapp: usage with exit 2; --check reports the cache decision", async () => {
    const usage = await script("e2e/web/webapp.ts", [], { DEER_FLOW_FRONTEND_DIR: "" });
    expect(usage.code).toBe(2);
    expect(usage.stderr).toContain("npm run webapp: --frontend is required");
    expect(usage.stderr).toContain("usage: npm run webapp -- --frontend <path to deer-flow/frontend>");
    const dir = checkout("check-app");
    const cache = path.join(work, "check-cache");
    const before = await script("e2e/web/webapp.ts", ["--frontend", dir, "--cache", cache, "--check"]);
    expect([before.code, before.stdout.trim()]).toEqual([0, `[webapp] not built: ${buildPlan(dir, cache).appDir}`]);
    mkdirSync(path.join(buildPlan(dir, cache).appDir, ".next"), { recursive: true });
    writeFileSync(path.join(buildPlan(dir, cache).appDir, ".next", "BUILD_ID"), "b");
    const after = await script("e2e/web/webapp.ts", ["--frontend", dir, "--cache", cache, "--check"]);
    expect(after.stdout.trim()).toBe(`[webapp] cached: ${buildPlan(dir, cache).appDir}`);
  });
});
