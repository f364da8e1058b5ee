import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFakeAioSandbox, type FakeAioSandbox } from "../support/fakes/aio-sandbox.js";
import { postJson, startHarness, uploadFiles, type Harness } from "../support/harness.js";
import { until } from "../support/wait.js";
import { aioSandboxId } from "../../src/sandbox/aio-provider.js";

// Issue 45 item 2: with `sandbox.use: deerflow.community.aio_sandbox:AioSandboxProvider` and a provisioner, the
// file tools, bash, uploads and artifacts of a thread all work in that thread's own remote sandbox (the fake's temp
// directory), never in the gateway's host directories; bash needs no allow_host_bash.
const TOOLS = ["bash", "ls", "read_file", "write_file", "str_replace", "glob", "grep"];
const config = (provisioner: string) =>
  "models:\n  - name: s\n    use: deerflow-gateway:ScriptedChatModel\n    model: s\n" +
  `sandbox:\n  use: deerflow.community.aio_sandbox:AioSandboxProvider\n  provisioner_url: ${provisioner}\n  provisioner_api_key: $FAKE_PROVISIONER_KEY\n  idle_timeout: 1\n` +
  "tool_groups:\n  - name: sandbox\n" +
  `tools:\n${TOOLS.map((t) => `  - name: ${t}\n    group: sandbox\n    use: deerflow.sandbox.tools:${t}_tool\n`).join("")}`;

let fake: FakeAioSandbox;
let h: Harness;
beforeAll(async () => {
  fake = await startFakeAioSandbox();
  fake.keys.provisioner = "prov-key-5b1f";
  process.env.FAKE_PROVISIONER_KEY = fake.keys.provisioner;
  h = await startHarness(config(fake.url));
});
afterAll(async () => {
  await h?.close();
  await fake?.close();
  delete process.env.FAKE_PROVISIONER_KEY;
});

/** Runs one scripted tool call on `thread` and returns the tool's result text. */
async function call(thread: string, tool: string, args: Record<string, unknown>): Promise<string> {
  await postJson(`${h.url}/threads`, { thread_id: thread, if_exists: "do_nothing" });
  const res = await postJson(`${h.url}/threads/${thread}/runs/wait`, { input: { messages: [{ role: "user", content: `!call ${tool} ${JSON.stringify(args)}` }] } });
  const values = await res.json();
  const tools = (values.messages ?? []).filter((m: { type: string }) => m.type === "tool");
  return String(tools.at(-1)?.content ?? JSON.stringify(values));
}
const remote = (thread: string, rel: string) => path.join(fake.rootOf(aioSandboxId("default", thread)), "mnt/user-data", rel);
const host = (thread: string, rel: string) => path.join(h.dir, ".deer-flow", "users", "default", "threads", thread, "user-data", rel);

describe("AioSandboxProvider with a provisioner", () => {
  it("runs bash in the thread's remote sandbox, in its workspace, without allow_host_bash", async () => {
    const out = await call("t-bash", "bash", { command: "echo hello > /mnt/user-data/outputs/x.txt; cat /mnt/user-data/outputs/x.txt; pwd" });
    expect(out).toBe("hello\n/mnt/user-data/workspace");
    expect(readFileSync(remote("t-bash", "outputs/x.txt"), "utf8")).toBe("hello\n");
    expect(existsSync(host("t-bash", "outputs/x.txt"))).toBe(false);
    const created = fake.created.find((c) => c.thread_id === "t-bash");
    expect(created).toEqual({ sandbox_id: aioSandboxId("default", "t-bash"), thread_id: "t-bash", user_id: "default" });
    const provisioned = fake.requests.find((r) => r.route === "/api/sandboxes" && r.method === "POST");
    expect(provisioned?.headers["x-api-key"]).toBe("prov-key-5b1f");
  });

  it("reports a non-zero exit with the output", async () => {
    expect(await call("t-exit", "bash", { command: "echo oops >&2; exit 3" })).toBe("oops\n[exit code: 3]");
  });

  it("writes, reads, edits, lists and searches files there", async () => {
    const t = "t-files";
    expect(await call(t, "write_file", { path: "/mnt/user-data/workspace/notes/a.md", content: "alpha\nbeta\n" })).toBe("OK");
    expect(readFileSync(remote(t, "workspace/notes/a.md"), "utf8")).toBe("alpha\nbeta\n");
    // read_before_write (on by default, as upstream): a write to an existing file needs a read of its current version.
    expect(await call(t, "read_file", { path: "/mnt/user-data/workspace/notes/a.md" })).toBe("alpha\nbeta\n");
    expect(await call(t, "write_file", { path: "/mnt/user-data/workspace/notes/a.md", content: "gamma\n", append: true })).toBe("OK");
    expect(await call(t, "read_file", { path: "/mnt/user-data/workspace/notes/a.md" })).toBe("alpha\nbeta\ngamma\n");
    expect(await call(t, "read_file", { path: "/mnt/user-data/workspace/notes/a.md", start_line: 2, end_line: 2 })).toBe("beta");
    expect(await call(t, "str_replace", { path: "/mnt/user-data/workspace/notes/a.md", old_str: "beta", new_str: "BETA" })).toBe("OK");
    expect(await call(t, "ls", { path: "/mnt/user-data/workspace" })).toBe("/mnt/user-data/workspace/notes/\n/mnt/user-data/workspace/notes/a.md");
    expect(await call(t, "glob", { description: "d", pattern: "*.md", path: "/mnt/user-data/workspace" })).toBe("Found 1 paths under /mnt/user-data/workspace\n1. /mnt/user-data/workspace/notes/a.md");
    expect(await call(t, "grep", { description: "d", pattern: "BETA", path: "/mnt/user-data/workspace" })).toBe("Found 1 matches under /mnt/user-data/workspace\n/mnt/user-data/workspace/notes/a.md:2: BETA");
    expect(existsSync(host(t, "workspace/notes/a.md"))).toBe(false);
  });

  it("words missing files and refused paths as the local tools do, before anything is sent", async () => {
    expect(await call("t-err", "read_file", { path: "/mnt/user-data/workspace/none.txt" })).toBe("Error: File not found: /mnt/user-data/workspace/none.txt");
    const before = fake.requests.length;
    expect(await call("t-err", "read_file", { path: "/etc/passwd" })).toMatch(/^Error: Access denied: path must be under \/mnt\/user-data/);
    expect(await call("t-err", "write_file", { path: "/mnt/user-data/../etc/x", content: "x" })).toMatch(/^Error: /);
    expect(fake.requests.slice(before).some((r) => r.route.startsWith("/v1/file"))).toBe(false);
    expect(await call("t-err", "grep", { description: "d", pattern: "(a", path: "/mnt/user-data/workspace" })).toMatch(/^Error: Invalid regex pattern/);
  });

  it("places an upload into the remote sandbox, where bash sees it", async () => {
    await postJson(`${h.url}/threads`, { thread_id: "t-up" });
    const res = await uploadFiles(h.url, "t-up", [["data.csv", "a,b\n1,2\n"]]);
    expect(res.status).toBe(200);
    expect(readFileSync(remote("t-up", "uploads/data.csv"), "utf8")).toBe("a,b\n1,2\n");
    expect(await call("t-up", "bash", { command: "wc -l < /mnt/user-data/uploads/data.csv" })).toBe("2");
  });

  it("serves an artifact written in the remote sandbox over the artifacts route", async () => {
    await call("t-art", "bash", { command: "printf '# Report\\n' > /mnt/user-data/outputs/report.md" });
    const res = await fetch(`${h.url}/api/threads/t-art/artifacts/mnt/user-data/outputs/report.md`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toContain("text/markdown");
    expect(await res.text()).toBe("# Report\n");
    const ranged = await fetch(`${h.url}/api/threads/t-art/artifacts/outputs/report.md`, { headers: { range: "bytes=2-7" } });
    expect(ranged.status).toBe(206);
    expect(await ranged.text()).toBe("Report");
    expect((await fetch(`${h.url}/api/threads/t-art/artifacts/outputs/missing.md`)).status).toBe(404);
  });

  it("gives two threads different sandboxes, and destroys a released one after idle_timeout", async () => {
    await call("t-one", "write_file", { path: "/mnt/user-data/workspace/only-one.txt", content: "1" });
    expect(await call("t-two", "bash", { command: "ls /mnt/user-data/workspace; echo end" })).toBe("end");
    const one = aioSandboxId("default", "t-one");
    expect(one).not.toBe(aioSandboxId("default", "t-two"));
    await until(() => fake.destroyed.includes(one), 5000);
    // The next run of the thread gets a sandbox again.
    expect(await call("t-one", "bash", { command: "echo back" })).toBe("back");
  });

  it("destroys the thread's sandbox when the thread is deleted", async () => {
    await call("t-del", "bash", { command: "true" });
    expect((await fetch(`${h.url}/threads/t-del`, { method: "DELETE" })).status).toBeLessThan(300);
    await until(() => fake.destroyed.includes(aioSandboxId("default", "t-del")));
  });
});
