import { existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { LocalSandboxProvider } from "../../src/sandbox/local-provider.js";
import { checkPathText, parseVirtualPath, SandboxPathError } from "../../src/sandbox/paths.js";
import { ensureSandbox } from "../../src/sandbox/provider.js";

let home: string;
let provider: LocalSandboxProvider;
beforeEach(() => {
  home = mkdtempSync(path.join(tmpdir(), "sbx-home-"));
  provider = new LocalSandboxProvider({ baseDir: home });
});
afterEach(() => rmSync(home, { recursive: true, force: true }));

const userData = (thread: string, user = "default") => path.join(home, "users", user, "threads", thread, "user-data");

describe("LocalSandboxProvider", () => {
  it("creates the thread's workspace, uploads and outputs directories and returns a stable id", () => {
    expect(provider.acquire("t1")).toBe("local:default:t1");
    expect(provider.acquire("t1")).toBe("local:default:t1");
    for (const area of ["workspace", "uploads", "outputs"]) expect(existsSync(path.join(userData("t1"), area))).toBe(true);
    expect(provider.acquire("t1", { userId: "alice" })).toBe("local:alice:t1");
    expect(existsSync(path.join(userData("t1", "alice"), "workspace"))).toBe(true);
  });

  it("refuses unsafe thread and user ids before touching the disk", () => {
    expect(() => provider.acquire("../escape")).toThrow("Invalid thread id");
    expect(() => provider.acquire("t1", { userId: "../../x" })).toThrow("Invalid user id");
    expect(existsSync(path.join(home, "users"))).toBe(false);
  });

  it("hands out the cached sandbox by id, rebuilds it after a restart, and ignores foreign ids", () => {
    const id = provider.acquire("t2");
    expect(provider.get(id)?.threadId).toBe("t2");
    expect(new LocalSandboxProvider({ baseDir: home }).get(id)?.dirs.root).toBe(userData("t2"));
    expect(provider.get("aio-123")).toBeUndefined();
    expect(provider.get("local:default:../x")).toBeUndefined();
  });

  it("drops its state and the thread's files on removeThread (thread deletion)", () => {
    provider.acquire("t3");
    writeFileSync(path.join(userData("t3"), "outputs", "r.md"), "x");
    expect(provider.has("t3")).toBe(true);
    provider.removeThread("t3");
    expect(provider.has("t3")).toBe(false);
    expect(existsSync(userData("t3"))).toBe(false);
    expect(() => provider.removeThread("t3")).not.toThrow();
  });

  it("keeps at most maxCachedThreads sandboxes (LRU)", () => {
    const small = new LocalSandboxProvider({ baseDir: home, maxCachedThreads: 2 });
    small.acquire("a");
    small.acquire("b");
    small.acquire("a");
    small.acquire("c");
    expect([small.has("a"), small.has("b"), small.has("c")]).toEqual([true, false, true]);
  });

  it("is acquired lazily through ensureSandbox with the context's user", async () => {
    const runtime = { state: {} as Record<string, unknown>, context: { thread_id: "t4", user_id: "bob" } as Record<string, unknown> };
    expect(await ensureSandbox(runtime, provider)).toBe("local:bob:t4");
    expect(runtime.state.sandbox).toEqual({ sandbox_id: "local:bob:t4" });
    expect(existsSync(path.join(userData("t4", "bob"), "outputs"))).toBe(true);
  });
});

describe("virtual path rules", () => {
  it("accepts paths under /mnt/user-data/{workspace,uploads,outputs}", () => {
    expect(parseVirtualPath("/mnt/user-data/outputs/a/./b.txt")).toEqual({ area: "outputs", segments: ["a", "b.txt"], virtual: "/mnt/user-data/outputs/a/b.txt" });
    expect(parseVirtualPath("/mnt/user-data", { allowRoot: true }).area).toBeNull();
  });

  it.each([
    ["", "Path is empty"],
    ["/mnt/user-data/workspace/../../etc/passwd", "Path traversal"],
    ["/mnt/user-data/workspace/%2e%2e%2fsecret", "percent-encoded"],
    ["/mnt/user-data/workspace/a%2Fb", "percent-encoded"],
    ["/mnt/user-data/workspace/a\\..\\b", "Backslashes"],
    ["/mnt/user-data/workspace/a\u0000b", "control characters"],
    [`/mnt/user-data/workspace/${"x".repeat(256)}`, "component is too long"],
    [`/mnt/user-data/workspace/${"a/".repeat(2100)}`, "too long"],
    ["/etc/passwd", "Only paths under /mnt/user-data"],
    ["/mnt/user-data/secrets/x", "Only paths under /mnt/user-data"],
    ["workspace/a.txt", "must be absolute"],
    ["/mnt/user-data", "must name a file"],
  ])("refuses path %# (%s)", (input, message) => {
    expect(() => parseVirtualPath(input)).toThrow(SandboxPathError);
    expect(() => parseVirtualPath(input)).toThrow(message);
  });

  it("checks text without requiring the virtual prefix", () => {
    expect(() => checkPathText("a/b.txt")).not.toThrow();
    expect(() => checkPathText("..")).toThrow("Path traversal");
  });
});

describe("LocalSandbox realpath checks", () => {
  it("refuses reads and writes through symlinks, whether they lead outside the thread or inside", async () => {
    const sandbox = provider.sandboxFor("t5");
    const outside = mkdtempSync(path.join(tmpdir(), "sbx-outside-"));
    try {
      writeFileSync(path.join(outside, "secret.txt"), "top secret");
      symlinkSync(outside, path.join(sandbox.dirs.workspace, "out-dir"));
      symlinkSync(path.join(outside, "secret.txt"), path.join(sandbox.dirs.workspace, "out-file"));
      await expect(sandbox.readFile("/mnt/user-data/workspace/out-file")).rejects.toThrow("passes through a symlink");
      await expect(sandbox.readFile("/mnt/user-data/workspace/out-dir/secret.txt")).rejects.toThrow(SandboxPathError);
      await expect(sandbox.writeFile("/mnt/user-data/workspace/out-dir/new.txt", "x")).rejects.toThrow(SandboxPathError);
      await expect(sandbox.writeFile("/mnt/user-data/workspace/out-file", "overwrite", true)).rejects.toThrow(SandboxPathError);
      await expect(sandbox.listDir("/mnt/user-data/workspace/out-dir")).rejects.toThrow(SandboxPathError);
      expect(existsSync(path.join(outside, "new.txt"))).toBe(false);

      mkdirSync(path.join(sandbox.dirs.outputs, "real"));
      writeFileSync(path.join(sandbox.dirs.outputs, "real", "r.txt"), "inside");
      symlinkSync(path.join(sandbox.dirs.outputs, "real"), path.join(sandbox.dirs.workspace, "link-in"));
      // Symlinks are never followed (sandboxed code can retarget one between a check and a use), even inside.
      await expect(sandbox.readFile("/mnt/user-data/workspace/link-in/r.txt")).rejects.toThrow(SandboxPathError);
      expect((await sandbox.readFile("/mnt/user-data/outputs/real/r.txt")).text).toBe("inside");
    } finally {
      rmSync(outside, { recursive: true, force: true });
    }
  });

  it("writes atomically, creates parents, appends, and masks host paths in text", async () => {
    const sandbox = provider.sandboxFor("t6");
    await sandbox.writeFile("/mnt/user-data/outputs/deep/er/f.txt", "one\n");
    await sandbox.writeFile("/mnt/user-data/outputs/deep/er/f.txt", "two\n", true);
    expect((await sandbox.readFile("/mnt/user-data/outputs/deep/er/f.txt")).text).toBe("one\ntwo\n");
    expect(await sandbox.listDir("/mnt/user-data/outputs")).toEqual(["/mnt/user-data/outputs/deep/", "/mnt/user-data/outputs/deep/er/"]);
    expect(sandbox.maskOutput(`at ${sandbox.dirs.workspace}/x`)).toBe("at /mnt/user-data/workspace/x");
  });
});
