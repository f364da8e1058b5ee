// Shared setup for sandbox tool tests: a temp runtime home, a provider, a runtime config for one thread, and a
// directory outside the thread (with a secret and symlinks pointing at it) to prove nothing leaks or lands there.
import { mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { parseAppConfig } from "../../../src/config/schema.js";
import { LocalSandboxProvider } from "../../../src/sandbox/local-provider.js";
import type { LocalSandbox } from "../../../src/sandbox/local-sandbox.js";

/** One thread's sandbox in a temp home, with an `outside` directory next to the home. */
export interface SandboxFixture {
  home: string;
  outside: string;
  provider: LocalSandboxProvider;
  sandbox: LocalSandbox;
  /** Runtime config a tool receives: context with thread, user, provider and app config. */
  config(sandbox?: Record<string, unknown>): { context: Record<string, unknown>; state: Record<string, unknown> };
  /** Every file under `outside` and under the home but outside the thread's user-data (relative paths). */
  strayFiles(): string[];
  cleanup(): void;
}

function walk(dir: string, skip: string, base = dir): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (full === skip) continue;
    if (entry.isDirectory()) out.push(...walk(full, skip, base));
    else out.push(path.relative(base, full));
  }
  return out;
}

/** Creates the fixture; `workspace/escape-dir` and `workspace/escape-file` are symlinks into `outside`. */
export function createSandboxFixture(threadId = "thread-1"): SandboxFixture {
  const root = mkdtempSync(path.join(tmpdir(), "sbx-tools-"));
  const home = path.join(root, "home");
  const outside = path.join(root, "outside");
  mkdirSync(outside, { recursive: true });
  writeFileSync(path.join(outside, "secret.txt"), "TOP-SECRET");
  const provider = new LocalSandboxProvider({ baseDir: home });
  const sandbox = provider.sandboxFor(threadId);
  symlinkSync(outside, path.join(sandbox.dirs.workspace, "escape-dir"));
  symlinkSync(path.join(outside, "secret.txt"), path.join(sandbox.dirs.workspace, "escape-file"));
  return {
    home,
    outside,
    provider,
    sandbox,
    config(sandboxConfig = {}) {
      const appConfig = parseAppConfig({ sandbox: { use: "deerflow.sandbox.local:LocalSandboxProvider", ...sandboxConfig } });
      return { context: { thread_id: threadId, user_id: "default", sandbox_provider: provider, app_config: appConfig }, state: {} };
    },
    strayFiles() {
      const seeded = new Set(["outside/secret.txt"]);
      return walk(root, sandbox.dirs.root).filter((f) => !seeded.has(f));
    },
    cleanup() {
      rmSync(root, { recursive: true, force: true });
    },
  };
}

/** Path-traversal attempts every sandbox tool must refuse, each with the text its error must contain. */
export const TRAVERSAL_ATTEMPTS: [label: string, path: string, message: string][] = [
  ["'..' components", "/mnt/user-data/workspace/../../../../outside/pwned.txt", "Path traversal"],
  ["an absolute host path", "/etc/passwd", "Only paths under /mnt/user-data"],
  ["a relative path", "../outside/pwned.txt", "Path traversal"],
  ["a symlink to a directory outside", "/mnt/user-data/workspace/escape-dir/pwned.txt", "outside the thread's directories"],
  ["a symlink to a file outside", "/mnt/user-data/workspace/escape-file", "outside the thread's directories"],
  ["percent-encoded separators", "/mnt/user-data/workspace/%2e%2e%2f%2e%2e%2fpwned.txt", "percent-encoded"],
  ["a very long name", `/mnt/user-data/workspace/${"n".repeat(300)}.txt`, "too long"],
  ["a very long path", `/mnt/user-data/workspace/${"d/".repeat(2500)}f.txt`, "too long"],
];
