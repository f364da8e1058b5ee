// A run's workspace changes over HTTP (DeerFlow workspace_changes/ + GET .../runs/{id}/workspace-changes): an agent
// writes files through the scripted model's `!call write_file`, and the route lists them with unified diffs in the
// shape the web app's changes badge and diff panel read.
import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { postJson, startHarness, type Harness } from "../support/harness.js";

const CONFIG = [
  "models:\n  - name: s\n    use: deerflow-gateway:ScriptedChatModel\n    model: s",
  "tool_groups:\n  - name: file:write",
  "tools:\n  - name: write_file\n    group: file:write\n    use: deerflow-gateway/sandbox:writeFileTool\n  - name: read_file\n    group: file:write\n    use: deerflow-gateway/sandbox:readFileTool",
  "",
].join("\n");
vi.setConfig({ testTimeout: 120_000, hookTimeout: 120_000 });
let h: Harness;
beforeEach(async () => {
  h = await startHarness(CONFIG);
});
afterEach(async () => h.close());

const get = async (p: string) => {
  const res = await fetch(`${h.url}${p}`);
  return { status: res.status, body: (await res.json()) as any };
};
/** One turn; returns the run id. */
const say = async (threadId: string, text: string): Promise<string> => {
  const res = await postJson(`${h.url}/api/threads/${threadId}/runs/wait`, { assistant_id: "lead_agent", input: { messages: [{ type: "human", content: text }] } });
  expect(res.status).toBe(200);
  const runs = (await get(`/api/threads/${threadId}/runs`)).body as any[];
  return runs[0].run_id;
};
const write = (p: string, content: string) => `!call write_file ${JSON.stringify({ path: p, content, description: "save" })}`;
const outputs = (threadId: string) => path.join(process.env.DEER_FLOW_HOME!, "users", "default", "threads", threadId, "user-data", "outputs");

describe("workspace changes", () => {
  it("lists a file written in the run that created its thread (no first scan), and nothing for a run without tools", async () => {
    // A stateless run creates its thread under a new id (the worker reads no checkpoint of it).
    const res = await postJson(`${h.url}/runs/wait`, { assistant_id: "lead_agent", input: { messages: [{ type: "human", content: write("/mnt/user-data/outputs/new.md", "fresh\n") }] } });
    expect(res.status).toBe(200);
    const [, , w0, , runId] = String(res.headers.get("content-location")).split("/");
    const changes = await get(`/api/threads/${w0}/runs/${runId}/workspace-changes`);
    expect(changes.body).toMatchObject({ available: true, summary: { created: 1, modified: 0, deleted: 0 } });
    expect(changes.body.files.map((f: any) => f.path)).toEqual(["/mnt/user-data/outputs/new.md"]);
    const chat = await say(w0, "hello");
    expect((await get(`/api/threads/${w0}/runs/${chat}/workspace-changes`)).body).toMatchObject({ available: false });
  });

  it("lists a file the agent wrote, with its unified diff; then a change in a later run", async () => {
    await postJson(`${h.url}/api/threads`, { thread_id: "w1" });
    const first = await say("w1", write("/mnt/user-data/outputs/report.md", "# Report\nline one\n"));
    const changes = await get(`/api/threads/w1/runs/${first}/workspace-changes`);
    expect(changes.status).toBe(200);
    expect(changes.body).toMatchObject({ available: true, version: 1, summary: { created: 1, modified: 0, deleted: 0, additions: 2, deletions: 0, truncated: false } });
    expect(changes.body.limits).toEqual({ max_files: 200, max_scanned_files: 2000, max_file_bytes_for_diff: 262144, max_total_diff_bytes: 1048576 });
    const [file] = changes.body.files;
    expect(file).toMatchObject({ path: "/mnt/user-data/outputs/report.md", root: "outputs", status: "created", binary: false, sensitive: false, size_before: null, size_after: 18, sha256_before: null, additions: 2, deletions: 0, diff_unavailable_reason: null, symlink: false });
    expect(file.diff).toBe("--- a/mnt/user-data/outputs/report.md\n+++ b/mnt/user-data/outputs/report.md\n@@ -0,0 +1,2 @@\n+# Report\n+line one");
    const noDiff = await get(`/api/threads/w1/runs/${first}/workspace-changes?include_diff=false`);
    expect(noDiff.body.files[0].diff).toBe("");
    expect((await get(`/api/threads/w1/runs/${first}/workspace-changes?include_files=false`)).body.files).toEqual([]);

    // A file changed outside the run between turns is the baseline of the next run, not its change.
    mkdirSync(outputs("w1"), { recursive: true });
    writeFileSync(path.join(outputs("w1"), "old.txt"), "x");
    // write_file refuses to overwrite a file the agent has not read (read-before-write): read it first.
    const read = await say("w1", `!call read_file ${JSON.stringify({ path: "/mnt/user-data/outputs/report.md", description: "check" })}`);
    expect((await get(`/api/threads/w1/runs/${read}/workspace-changes`)).body.available).toBe(false);
    const second = await say("w1", write("/mnt/user-data/outputs/report.md", "# Report\nline two\n"));
    const again = (await get(`/api/threads/w1/runs/${second}/workspace-changes`)).body;
    expect(again.summary).toMatchObject({ created: 0, modified: 1, additions: 1, deletions: 1 });
    expect(again.files.map((f: any) => f.path)).toEqual(["/mnt/user-data/outputs/report.md"]);
    expect(again.files[0].diff).toContain("-line one\n+line two");
  });

  it("hides a secret-looking file's content, and a run that changed nothing is not available", async () => {
    await postJson(`${h.url}/api/threads`, { thread_id: "w2" });
    const run = await say("w2", write("/mnt/user-data/workspace/.env", "API_KEY=sk-not-for-the-panel"));
    const body = (await get(`/api/threads/w2/runs/${run}/workspace-changes`)).body;
    expect(body.files[0]).toMatchObject({ path: "/mnt/user-data/workspace/.env", root: "workspace", sensitive: true, diff: "", diff_unavailable_reason: "sensitive" });
    expect(JSON.stringify(body)).not.toContain("sk-not-for-the-panel");
    const quiet = await say("w2", "hello");
    expect((await get(`/api/threads/w2/runs/${quiet}/workspace-changes`)).body).toEqual({
      available: false, version: 1, files: [], limits: {}, summary: { created: 0, modified: 0, deleted: 0, symlink_created: 0, additions: 0, deletions: 0, truncated: false },
    });
    expect((await get(`/api/threads/w2/runs/nope/workspace-changes`)).status).toBe(404);
  });
});
