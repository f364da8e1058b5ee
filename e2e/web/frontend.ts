// The DeerFlow web app for the browser check and `npm run webapp`: a frontend checkout copied, installed and built
// once, and cached under a directory keyed by a hash of its source, so later runs start the built app at once.
import { execFileSync, spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync } from "node:fs";
import { homedir } from "node:os";
import path from "node:path";

/** Directories never part of the app's source (build outputs, installed packages, VCS). */
const SKIP = new Set(["node_modules", ".next", ".git", "test-results", "playwright-report"]);

/** SHA-256 over every source file's relative path and content, sorted: the cache key of a build. */
export function hashSource(dir: string): string {
  const hash = createHash("sha256");
  const walk = (rel: string) => {
    for (const name of readdirSync(path.join(dir, rel)).sort()) {
      if (SKIP.has(name)) continue;
      const relPath = path.join(rel, name);
      const full = path.join(dir, relPath);
      if (statSync(full).isDirectory()) walk(relPath);
      else hash.update(relPath).update("\0").update(readFileSync(full)).update("\0");
    }
  };
  walk("");
  return hash.digest("hex").slice(0, 16);
}

/** Runs a command, streaming its output with a prefix; rejects on a non-zero exit. */
function run(cmd: string, args: string[], cwd: string, env: NodeJS.ProcessEnv, label: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { cwd, env, stdio: ["ignore", "pipe", "pipe"] });
    const out = (chunk: Buffer) => process.stdout.write(chunk.toString().replace(/^/gm, `[${label}] `));
    child.stdout.on("data", out);
    child.stderr.on("data", out);
    child.on("error", reject);
    child.on("exit", (code) => (code === 0 ? resolve() : reject(new Error(`${label}: ${cmd} ${args.join(" ")} exited with ${code}`))));
  });
}

/** The default build cache: `$DEER_FLOW_E2E_CACHE` or `~/.cache/deerflow-gateway/e2e-web`. */
export const defaultCacheRoot = (): string => process.env.DEER_FLOW_E2E_CACHE ?? path.join(homedir(), ".cache", "deerflow-gateway", "e2e-web");

/** Thrown when the frontend source is missing or is not the DeerFlow app: its message is the one line to show. */
export class FrontendSourceError extends Error {}

/**
 * Checks that `dir` is a DeerFlow frontend checkout (a directory with `package.json` and a `next` dependency).
 * @returns the absolute path.
 * @throws FrontendSourceError with one line saying what is needed.
 */
export function checkFrontendSource(dir: string, hint: string): string {
  const abs = path.resolve(dir);
  if (!existsSync(path.join(abs, "package.json"))) {
    throw new FrontendSourceError(`needs the DeerFlow web app's source (the frontend/ folder of a deer-flow checkout): ${abs} has no package.json; ${hint}`);
  }
  const pkg = JSON.parse(readFileSync(path.join(abs, "package.json"), "utf8")) as { dependencies?: Record<string, string> };
  if (!pkg.dependencies?.next) throw new FrontendSourceError(`${abs} is not the DeerFlow web app (its package.json has no "next" dependency); ${hint}`);
  return abs;
}

/** How a checkout installs its packages: pnpm (a pnpm lockfile or `packageManager: pnpm@...`) or npm. */
export function packageManagerFor(dir: string): { install: [string, string[]]; build: [string, string[]] } {
  const pkg = JSON.parse(readFileSync(path.join(dir, "package.json"), "utf8")) as { packageManager?: string };
  if (pkg.packageManager?.startsWith("pnpm@") || existsSync(path.join(dir, "pnpm-lock.yaml"))) {
    const pnpm = pkg.packageManager?.startsWith("pnpm@") ? pkg.packageManager : "pnpm@10";
    return { install: ["npx", ["-y", pnpm, "install", "--frozen-lockfile"]], build: ["npx", ["-y", pnpm, "build"]] };
  }
  const ci = existsSync(path.join(dir, "package-lock.json"));
  return { install: ["npm", ci ? ["ci"] : ["install"]], build: ["npm", ["run", "build"]] };
}

/** Where the build of `sourceDir` lives in the cache and whether it is already there (`.next/BUILD_ID`). */
export function buildPlan(sourceDir: string, cacheRoot = defaultCacheRoot()): { key: string; appDir: string; cached: boolean } {
  const key = hashSource(sourceDir);
  const appDir = path.join(cacheRoot, key);
  return { key, appDir, cached: existsSync(path.join(appDir, ".next", "BUILD_ID")) };
}

/**
 * Returns the directory of a built copy of the web app (`.next/BUILD_ID` present), building it when the cache
 * has none for this source ({@link buildPlan}): copy to `<cache>/<hash>.tmp`, install its packages and build
 * ({@link packageManagerFor}), then rename to `<cache>/<hash>` (a failed build leaves nothing that looks complete).
 * @param sourceDir The app's source.
 * @param cacheRoot Default {@link defaultCacheRoot}.
 */
export async function ensureFrontendBuild(sourceDir: string, cacheRoot = defaultCacheRoot()): Promise<string> {
  const { appDir, cached } = buildPlan(sourceDir, cacheRoot);
  if (cached) {
    console.log(`[frontend] using the cached build ${appDir}`);
    return appDir;
  }
  const work = `${appDir}.tmp`;
  rmSync(work, { recursive: true, force: true });
  mkdirSync(cacheRoot, { recursive: true });
  console.log(`[frontend] building ${sourceDir} in ${work} (first run for this source: several minutes)`);
  cpSync(sourceDir, work, { recursive: true, filter: (src) => !SKIP.has(path.basename(src)) });
  const pm = packageManagerFor(work);
  const env = { ...process.env, SKIP_ENV_VALIDATION: "1", NEXT_TELEMETRY_DISABLED: "1", CI: "1" };
  await run(pm.install[0], pm.install[1], work, env, "frontend");
  await run(pm.build[0], pm.build[1], work, env, "frontend");
  renameSync(work, appDir);
  return appDir;
}

/** The `next` binary of a built app. */
export function nextBin(appDir: string): string {
  const bin = path.join(appDir, "node_modules", ".bin", "next");
  if (!existsSync(bin)) throw new Error(`next is not installed in ${appDir}`);
  return bin;
}

/** Whether Debian's chromium is installed; returns its path. */
export function findChromium(): string | null {
  for (const p of ["/usr/bin/chromium", "/usr/bin/chromium-browser"]) if (existsSync(p)) return p;
  try {
    return execFileSync("which", ["chromium"], { encoding: "utf8" }).trim() || null;
  } catch {
    return null;
  }
}
