import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { until } from "../support/wait.js";
import { runHostCommand, toHostCommand, truncateMiddle, validateBashCommand } from "../../src/sandbox/host-bash.js";
import { SandboxPathError } from "../../src/sandbox/paths.js";

const cwd = mkdtempSync(path.join(tmpdir(), "sbx-bash-"));
afterAll(() => rmSync(cwd, { recursive: true, force: true }));
const env = { PATH: "/usr/bin:/bin", HOME: cwd };
/** A killed process may linger as a zombie until reaped; that counts as dead. */
const isAlive = (pid: number) => {
  try {
    return !/^State:\s+Z/m.test(readFileSync(`/proc/${pid}/status`, "utf8"));
  } catch {
    return false;
  }
};

describe("validateBashCommand", () => {
  it.each([
    "ls /mnt/user-data/workspace",
    "python3 -c 'print(1)' > /mnt/user-data/outputs/o.txt 2>/dev/null",
    "cat ./notes.txt | /usr/bin/wc -l",
    "curl -s https://example.com/a/b?q=a%2Fb",
    "echo $HOME/x ${HOME}/y && sed 's/a/b/' f",
    "echo wait...",
  ])("accepts %j", (command) => expect(() => validateBashCommand(command)).not.toThrow());

  it.each([
    ["'..' components", "cat ../../../etc/passwd", "Path traversal"],
    ["cd ..", "cd .. && ls", "Path traversal"],
    ["an absolute host path", "cat /etc/passwd", "Host path '/etc/passwd'"],
    ["the root directory", "cd / && cat etc/passwd", "Host path '/'"],
    ["a symlink to a host path", "ln -s /etc e", "Host path '/etc'"],
    ["percent-encoded traversal", "cat %2e%2e%2f%2e%2e%2fetc%2fpasswd", "percent-encoded"],
    ["a percent-encoded host path", "python3 -c \"open('%2Fetc%2Fpasswd')\"", "percent-encoded"],
    ["a file:// URL", "curl file:///etc/passwd", "file://"],
    ["another user's home", "cat ~root/.ssh/id_rsa", "~user"],
    ["a very long command", "x".repeat(70_000), "Command is too long"],
    ["nothing", "  ", "empty"],
  ])("refuses a command with %s", (_label, command, message) => {
    expect(() => validateBashCommand(command)).toThrow(SandboxPathError);
    expect(() => validateBashCommand(command)).toThrow(message);
  });
});

describe("runHostCommand", () => {
  it("captures stdout and stderr together with the exit code, in the given cwd and env", async () => {
    const r = await runHostCommand("echo out; echo err >&2; pwd; echo \"k=${OPENAI_API_KEY:-unset}\"; exit 3", { cwd, env, timeoutSeconds: 10 });
    expect(r.output).toContain("out\n");
    expect(r.output).toContain("err\n");
    expect(r.output).toContain(cwd);
    expect(r.output).toContain("k=unset");
    expect(r.exitCode).toBe(3);
    expect(r.timedOut).toBe(false);
  });

  it("kills the whole process group when the timeout passes", async () => {
    const started = Date.now();
    const r = await runHostCommand(`sleep 30 & echo $! > ${cwd}/child.pid; echo started; wait`, { cwd, env, timeoutSeconds: 0.5 });
    expect(r.timedOut).toBe(true);
    expect(r.output).toContain("started");
    expect(Date.now() - started).toBeLessThan(5000);
    const child = Number(readFileSync(path.join(cwd, "child.pid"), "utf8"));
    await until(() => !isAlive(child));
  });

  it("stops at an abort signal and does not wait for background jobs holding the pipes", async () => {
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 200);
    const aborted = await runHostCommand("sleep 30", { cwd, env, timeoutSeconds: 30, signal: controller.signal });
    expect(aborted.aborted).toBe(true);
    const started = Date.now();
    const bg = await runHostCommand("sleep 3 & echo quick", { cwd, env, timeoutSeconds: 30 });
    expect(bg.output).toContain("quick");
    expect(Date.now() - started).toBeLessThan(2000);
  });
});

describe("output helpers", () => {
  it("middle-truncates to the limit, keeping head and tail", () => {
    const text = `HEAD${"x".repeat(10_000)}TAIL`;
    const out = truncateMiddle(text, 200);
    expect(out.length).toBeLessThanOrEqual(200);
    expect(out.startsWith("HEAD")).toBe(true);
    expect(out.endsWith("TAIL")).toBe(true);
    expect(out).toContain("middle truncated");
    expect(truncateMiddle(text, 0)).toBe(text);
  });

  it("rewrites /mnt/user-data to the host root at path boundaries only", () => {
    expect(toHostCommand("cat /mnt/user-data/outputs/a '/mnt/user-data' /mnt/user-datax", "/h")).toBe("cat /h/outputs/a '/h' /mnt/user-datax");
  });
});
