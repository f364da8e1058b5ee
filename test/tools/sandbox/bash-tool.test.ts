import { existsSync, readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { until } from "../../support/wait.js";
import { bubblewrapStatus } from "../../../src/sandbox/bubblewrap.js";
import { bashTool } from "../../../src/tools/sandbox/index.js";
import { createSandboxFixture, type SandboxFixture } from "./helpers.js";

let fx: SandboxFixture;
beforeEach(() => {
  fx = createSandboxFixture();
});
afterEach(() => fx.cleanup());

const ALLOWED = { allow_host_bash: true };
const bash = (command: string, sandbox: Record<string, unknown> = ALLOWED, signal?: AbortSignal) =>
  (bashTool as unknown as { invoke(i: unknown, c: unknown): Promise<string> }).invoke({ command }, { ...fx.config(sandbox), signal });

describe("bash (host bash, local sandbox)", () => {
  it("is refused unless sandbox.allow_host_bash is true", async () => {
    const out = await bash("touch /mnt/user-data/workspace/ran", {});
    expect(out).toMatch(/^Error: Host bash execution is disabled/);
    expect(existsSync(path.join(fx.sandbox.dirs.workspace, "ran"))).toBe(false);
  });

  it("runs in the workspace with /mnt/user-data mapped, shows virtual paths, and keeps the gateway's env out", async () => {
    process.env.DFGW_TEST_SECRET = "s3cret";
    try {
      const out = await bash("pwd; echo hi > /mnt/user-data/outputs/o.txt; cat /mnt/user-data/outputs/o.txt; echo \"secret=${DFGW_TEST_SECRET:-none}\"");
      expect(out).toBe("/mnt/user-data/workspace\nhi\nsecret=none");
      expect(readFileSync(path.join(fx.sandbox.dirs.outputs, "o.txt"), "utf8")).toBe("hi\n");
    } finally {
      delete process.env.DFGW_TEST_SECRET;
    }
  });

  it("reports a non-zero exit and (no output)", async () => {
    expect(await bash("echo oops >&2; exit 2")).toBe("oops\n[exit code: 2]");
    expect(await bash("true")).toBe("(no output)");
  });

  it.each([
    ["'..'", "cat ../../../../outside/secret.txt", "Path traversal"],
    ["an absolute host path", "echo pwned > /tmp/pwned.txt", "Host path '/tmp/pwned.txt'"],
    ["a symlink target outside", "ln -s / root-link", "Host path '/'"],
    ["percent-encoded separators", "python3 -c \"print(open('..%2f..%2fsecret.txt').read())\"", "percent-encoded"],
    ["a very long command", `echo ${"a".repeat(70_000)}`, "Command is too long"],
  ])("refuses a command with %s and runs nothing", async (_label, command, message) => {
    const out = await bash(command);
    expect(out).toMatch(/^Error: /);
    expect(out).toContain(message);
    expect(fx.strayFiles()).toEqual([]);
    expect(existsSync("/tmp/pwned.txt")).toBe(false);
  });

  it("follows a symlink that leads outside only without bubblewrap (inside it, the target is not mounted)", async () => {
    // Without bubblewrap host bash is not a security boundary, which is why it is off by default. The file tools
    // refuse this path; bash itself cannot create such a link without naming a host path or '..', which it refuses.
    const out = await bash("cat /mnt/user-data/workspace/escape-file");
    if (bubblewrapStatus().available) expect(out).toContain("No such file or directory");
    else expect(out).toBe("TOP-SECRET");
  });

  it("kills a command that outlives bash_command_timeout, with its process group", async () => {
    const started = Date.now();
    const out = await bash("echo before; sleep 20", { ...ALLOWED, bash_command_timeout: 0.5 });
    expect(out).toContain("Error: Command timed out after 0.5 seconds");
    expect(out).toContain("before");
    expect(Date.now() - started).toBeLessThan(5000);
  });

  it("kills the command's process group when the run is cancelled", async () => {
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 300);
    // A duration no other test uses, to find the background job among the host's processes (inside bubblewrap
    // it has another pid than the one `$!` shows).
    await expect(bash("sleep 23.25 & wait", ALLOWED, controller.signal)).rejects.toThrow(/abort/i);
    const alive = () => readdirSync("/proc").filter((pid) => {
      if (!/^\d+$/.test(pid)) return false;
      try {
        const cmd = readFileSync(`/proc/${pid}/cmdline`, "utf8");
        const state = /^State:\s+(\w)/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1];
        return cmd === "sleep\u000023.25\u0000" && state !== "Z";
      } catch {
        return false;
      }
    });
    await until(() => alive().length === 0);
  });

  it("middle-truncates output to bash_output_max_chars", async () => {
    const out = await bash("seq 1 5000", { ...ALLOWED, bash_output_max_chars: 400 });
    expect(out.length).toBeLessThanOrEqual(400);
    expect(out.startsWith("1\n2\n")).toBe(true);
    expect(out.endsWith("5000")).toBe(true);
    expect(out).toContain("middle truncated");
  });
});
