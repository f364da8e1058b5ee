// The DeerFlow web app for the browser check: copied from ../shared/reference/frontend, installed and built once,
// and cached under a directory keyed by a hash of its source, so later runs start the built app at once.
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

/**
 * Returns the directory of a built copy of the web app (`.next/BUILD_ID` present), building it when the cache
 * has none for this source: copy to `<cache>/<hash>.tmp`, `pnpm install --frozen-lockfile` (pnpm at the version
 * of the app's `packageManager`, through npx), `pnpm build`, then rename to `<cache>/<hash>` (a failed build
 * leaves nothing that looks complete).
 * @param sourceDir The app's source (`../shared/reference/frontend`).
 * @param cacheRoot Default `$DEER_FLOW_E2E_CACHE` or `~/.cache/deerflow-gateway/e2e-web`.
 */
export async function ensureFrontendBuild(sourceDir: string, cacheRoot = process.env.DEER_FLOW_E2E_CACHE ?? path.join(homedir(), ".cache", "deerflow-gateway", "e2e-web")): Promise<string> {
  const key = hashSource(sourceDir);
  const appDir = path.join(cacheRoot, key);
  if (existsSync(path.join(appDir, ".next", "BUILD_ID"))) {
    console.log(`[frontend] using the cached build ${appDir}`);
    return appDir;
  }
  const work = `${appDir}.tmp`;
  rmSync(work, { recursive: true, force: true });
  mkdirSync(cacheRoot, { recursive: true });
  console.log(`[frontend] building ${sourceDir} in ${work} (first run for this source: several minutes)`);
  cpSync(sourceDir, work, { recursive: true, filter: (src) => !SKIP.has(path.basename(src)) });
  const pkg = JSON.parse(readFileSync(path.join(work, "package.json"), "utf8")) as { packageManager?: string };
  const pnpm = pkg.packageManager?.startsWith("pnpm@") ? pkg.packageManager : "pnpm@10";
  const env = { ...process.env, SKIP_ENV_VALIDATION: "1", NEXT_TELEMETRY_DISABLED: "1", CI: "1" };
  await run("npx", ["-y", pnpm, "install", "--frozen-lockfile"], work, env, "frontend");
  await run("npx", ["-y", pnpm, "build"], work, env, "frontend");
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
