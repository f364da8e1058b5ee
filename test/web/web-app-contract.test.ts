// Contract tests: the DeerFlow web app's calls (paths, bodies) replayed over real HTTP, asserting the fields the
// app reads (../shared/reference/frontend/src/core/**/api.ts and threads/hooks.ts), so a shape regression fails CI.
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { claimPendingThread } from "../../src/runtime/webapp/pending-threads.js";
import { postJson, startHarness, type Harness } from "../support/harness.js";

const CONFIG = "models:\n  - name: s\n    use: deerflow-gateway:ScriptedChatModel\n    model: s\nuploads:\n  max_files: 5\n  max_file_size: 1000\n  max_total_size: 3000\n";
// The first run of a file pays for importing the whole agent stack; on a loaded 2-core machine that alone can
// take most of the default 20 s.
vi.setConfig({ testTimeout: 120_000, hookTimeout: 120_000 });
let h: Harness;
beforeEach(async () => {
  h = await startHarness(CONFIG);
});
afterEach(async () => h.close());

const getJson = async (p: string) => {
  const res = await fetch(`${h.url}${p}`);
  return { status: res.status, body: (await res.json()) as any };
};
const send = async (method: string, p: string, body?: unknown) => {
  const res = await fetch(`${h.url}${p}`, { method, headers: body === undefined ? {} : { "content-type": "application/json" }, body: body === undefined ? undefined : JSON.stringify(body) });
  return { status: res.status, body: (await res.json().catch(() => null)) as any, headers: res.headers };
};
/** One chat turn as the app sends it (LangGraph SDK: POST /api/langgraph/threads/{id}/runs/stream -> /api/threads/...). */
const chat = async (threadId: string, text: string, extra: Record<string, unknown> = {}) => {
  const res = await postJson(`${h.url}/api/threads/${threadId}/runs/wait`, {
    assistant_id: "lead_agent",
    input: { messages: [{ type: "human", id: `h-${text.length}-${Math.abs(hash(text))}`, content: [{ type: "text", text }] }] },
    ...extra,
  });
  expect(res.status).toBe(200);
  return res.json() as Promise<any>;
};
const hash = (s: string) => [...s].reduce((a, c) => (a * 31 + c.charCodeAt(0)) | 0, 7);
const uploadForm = (name: string, content: string) => {
  const form = new FormData();
  form.append("files", new Blob([content], { type: "text/plain" }), name);
  return form;
};

describe("new chat with an attached file", () => {
  it("uploads to a thread that does not exist yet, then the first run sees the file", async () => {
    const limits = await getJson("/api/threads/new-chat-1/uploads/limits");
    expect(limits).toEqual({ status: 200, body: { max_files: 5, max_file_size: 1000, max_total_size: 3000 } });
    expect(await getJson("/api/threads/new-chat-1/uploads/list")).toEqual({ status: 200, body: { files: [], count: 0 } });

    const up = await fetch(`${h.url}/api/threads/new-chat-1/uploads`, { method: "POST", body: uploadForm("notes.txt", "hello file") });
    expect(up.status).toBe(200);
    const uploaded = (await up.json()) as any;
    expect(uploaded.success).toBe(true);
    expect(uploaded.skipped_files).toEqual([]);
    expect(uploaded.files[0]).toMatchObject({ filename: "notes.txt", size: 10, virtual_path: "/mnt/user-data/uploads/notes.txt" });
    expect(uploaded.files[0].artifact_url).toBe("/api/threads/new-chat-1/artifacts/mnt/user-data/uploads/notes.txt");

    const list = await getJson("/api/threads/new-chat-1/uploads/list");
    expect(list.body.count).toBe(1);
    expect(list.body.files[0].filename).toBe("notes.txt");

    expect((await postJson(`${h.url}/api/threads`, { thread_id: "new-chat-1" })).status).toBe(200);
    await chat("new-chat-1", "read my notes");
    const file = await fetch(`${h.url}${uploaded.files[0].artifact_url}`);
    expect(await file.text()).toBe("hello file");
  });

  it("answers 404 when another user claimed the thread id first, and refuses creating that thread", async () => {
    claimPendingThread(process.env.DEER_FLOW_HOME!, "claimed", "someone-else");
    const up = await fetch(`${h.url}/api/threads/claimed/uploads`, { method: "POST", body: uploadForm("a.txt", "x") });
    expect(up.status).toBe(404);
    // The reads the app makes for a new chat answer as for a missing thread: nothing about the other user shows.
    expect(await getJson("/api/threads/claimed/uploads/list")).toEqual(await getJson("/api/threads/never-used/uploads/list"));
    expect((await getJson("/api/threads/claimed/uploads/limits")).status).toBe(200);
    expect((await postJson(`${h.url}/api/threads`, { thread_id: "claimed" })).status).toBe(409);
    expect(existsSync(path.join(process.env.DEER_FLOW_HOME!, "users", "default", "threads", "claimed"))).toBe(false);
  });
});

describe("reopening a thread", () => {
  it("pages the visible messages newest-first with valid seq cursors and run ids", async () => {
    await postJson(`${h.url}/api/threads`, { thread_id: "t1" });
    for (const text of ["one", "two", "three"]) await chat("t1", text);
    const runs = (await getJson("/api/threads/t1/runs?limit=10")).body as any[];
    const full = await getJson("/api/threads/t1/messages/page");
    expect(full.status).toBe(200);
    expect(full.body.has_more).toBe(false);
    expect(full.body.next_before_seq).toBeNull();
    const rows = full.body.data as any[];
    expect(rows.map((r) => [r.content.type, r.content.content])).toEqual([
      ["human", [{ type: "text", text: "one" }]], ["ai", "You said: one"],
      ["human", [{ type: "text", text: "two" }]], ["ai", "You said: two"],
      ["human", [{ type: "text", text: "three" }]], ["ai", "You said: three"],
    ]);
    const seqs = rows.map((r) => r.seq);
    expect(new Set(seqs).size).toBe(seqs.length);
    expect(seqs.every((s) => Number.isSafeInteger(s) && s >= 1)).toBe(true);
    expect([...seqs].sort((a, b) => a - b)).toEqual(seqs);
    for (const r of rows) expect(r).toHaveProperty("metadata.caller");
    // Each turn's messages carry the run that produced them.
    const runOf = (text: string) => rows.find((r) => r.content.type === "ai" && r.content.content === `You said: ${text}`).run_id;
    expect(new Set([runOf("one"), runOf("two"), runOf("three")]).size).toBe(3);
    expect(runs.map((r) => r.run_id)).toContain(runOf("two"));

    const first = await getJson("/api/threads/t1/messages/page?limit=4");
    expect(first.body.data).toHaveLength(4);
    expect(first.body.has_more).toBe(true);
    expect(first.body.next_before_seq).toBe(first.body.data[0].seq);
    const older = await getJson(`/api/threads/t1/messages/page?limit=4&before_seq=${first.body.next_before_seq}`);
    expect(older.body.data.map((r: any) => r.seq)).toEqual(seqs.slice(0, 2));
    expect(older.body).toMatchObject({ has_more: false, next_before_seq: null });
    expect((await getJson("/api/threads/t1/messages/page?after_seq=1")).status).toBe(422);
    expect((await getJson("/api/threads/t1/messages/page?limit=0")).status).toBe(422);
  });

  it("reports token usage the app's indicator reads, and 404 for an unknown thread", async () => {
    await postJson(`${h.url}/api/threads`, { thread_id: "t2" });
    await chat("t2", "count my tokens");
    const usage = await getJson("/api/threads/t2/token-usage");
    expect(usage.status).toBe(200);
    expect(usage.body).toMatchObject({ thread_id: "t2", total_runs: 1 });
    expect(usage.body.total_tokens).toBe(usage.body.total_input_tokens + usage.body.total_output_tokens);
    expect(usage.body.total_tokens).toBeGreaterThan(0);
    expect(usage.body.by_model.s).toEqual({ tokens: usage.body.total_tokens, runs: 1 });
    expect(usage.body.by_caller).toEqual({ lead_agent: usage.body.total_tokens, subagent: 0, middleware: 0 });
    expect(usage.body.context_usage.token_count).toBeGreaterThan(0);
    expect((await getJson("/api/threads/missing/token-usage")).status).toBe(404);
    expect((await getJson("/api/threads/missing/messages/page")).status).toBe(404);
  });
});

describe("features and features not offered", () => {
  it("reports optional features off and answers the disabled shapes the app reads", async () => {
    expect(await getJson("/api/features")).toEqual({ status: 200, body: { agents_api: { enabled: false }, browser_control: { enabled: false }, mcp_tasks: { enabled: false } } });
    h.writeConfig(`${CONFIG}agents_api:\n  enabled: true\n`);
    expect((await getJson("/api/features")).body.agents_api.enabled).toBe(true);
    expect(await getJson("/api/channels/providers")).toEqual({ status: 200, body: { enabled: false, providers: [] } });
    expect(await getJson("/api/channels/connections")).toEqual({ status: 200, body: { connections: [] } });
    expect(await getJson("/api/scheduled-tasks")).toEqual({ status: 200, body: [] });
    const lark = await getJson("/api/integrations/lark/status");
    expect(lark.body).toMatchObject({ installed: false, app_configured: false, cli: { available: false }, auth: { status: "unavailable" }, sandbox_runtime_ready: false });
    await postJson(`${h.url}/api/threads`, { thread_id: "t3" });
    expect(await getJson("/api/threads/t3/mcp-tasks?limit=20")).toEqual({ status: 200, body: [] });
    expect(await getJson("/api/threads/t3/scheduled-tasks")).toEqual({ status: 200, body: [] });
    // Channels are offered (docs/channels.md) but off in this config: a connect code is refused, saying why.
    const connect = await send("POST", "/api/channels/telegram/connect");
    expect(connect.status).toBe(400);
    expect(connect.body.detail).toBe("Channel connections are disabled");
    expect((await send("POST", "/api/threads/t3/browser/navigate", { url: "https://example.com" })).status).toBe(501);
    expect(await getJson("/api/suggestions/config")).toEqual({ status: 200, body: { enabled: true, max_suggestions: 3 } });
  });
});

describe("run events, workspace changes, feedback and goal", () => {
  it("keeps a run's event log after its stream is gone, and stores per-run feedback", async () => {
    await postJson(`${h.url}/api/threads`, { thread_id: "t4" });
    await chat("t4", "hello", { stream_mode: ["values", "updates", "custom"] });
    const [run] = (await getJson("/api/threads/t4/runs")).body as any[];
    const events = await getJson(`/api/threads/t4/runs/${run.run_id}/events`);
    expect(events.status).toBe(200);
    // DeerFlow's journal opens the run (run.start), then the run's SSE frames follow.
    expect(events.body.slice(0, 2)).toMatchObject([{ seq: 1, run_id: run.run_id, event_type: "run.start" }, { seq: 2, event_type: "metadata" }]);
    expect(events.body.some((e: any) => e.event_type === "updates")).toBe(true);
    expect(events.body.every((e: any) => e.event_type !== "values")).toBe(true);
    const onlyMeta = await getJson(`/api/threads/t4/runs/${run.run_id}/events?event_types=metadata`);
    expect(onlyMeta.body).toHaveLength(1);
    expect((await getJson(`/api/threads/t4/runs/nope/events`)).status).toBe(404);

    const changes = await getJson(`/api/threads/t4/runs/${run.run_id}/workspace-changes?include_files=true&include_diff=true`);
    expect(changes.body).toMatchObject({ available: false, files: [] });

    const put = await send("PUT", `/api/threads/t4/runs/${run.run_id}/feedback`, { rating: 1, comment: null });
    expect(put.status).toBe(200);
    expect(put.body).toMatchObject({ run_id: run.run_id, thread_id: "t4", rating: 1, comment: null });
    const again = await send("PUT", `/api/threads/t4/runs/${run.run_id}/feedback`, { rating: -1, comment: "meh" });
    expect(again.body.feedback_id).toBe(put.body.feedback_id);
    const page = await getJson("/api/threads/t4/messages/page");
    const lastAi = page.body.data.filter((r: any) => r.content.type === "ai").at(-1);
    expect(lastAi.feedback).toEqual({ feedback_id: put.body.feedback_id, rating: -1, comment: "meh" });
    expect((await send("PUT", `/api/threads/t4/runs/${run.run_id}/feedback`, { rating: 5 })).status).toBe(422);
    expect((await send("DELETE", `/api/threads/t4/runs/${run.run_id}/feedback`)).status).toBe(200);
    expect((await send("DELETE", `/api/threads/t4/runs/${run.run_id}/feedback`)).status).toBe(404);
  });

  it("sets, reads and clears the thread goal in thread state", async () => {
    await postJson(`${h.url}/api/threads`, { thread_id: "t5" });
    expect(await getJson("/api/threads/t5/goal")).toEqual({ status: 200, body: { goal: null } });
    const set = await send("PUT", "/api/threads/t5/goal", { objective: "ship it" });
    expect(set.status).toBe(200);
    expect(set.body.goal).toMatchObject({ objective: "ship it", status: "active", continuation_count: 0 });
    expect((await getJson("/api/threads/t5/goal")).body.goal.objective).toBe("ship it");
    expect((await getJson("/api/threads/t5/state")).body.values.goal.objective).toBe("ship it");
    expect((await send("DELETE", "/api/threads/t5/goal")).body).toEqual({ goal: null });
    expect((await getJson("/api/threads/t5/goal")).body).toEqual({ goal: null });
    expect((await send("PUT", "/api/threads/t5/goal", { objective: "" })).status).toBe(422);
  });
});

describe("artifact preview and editor", () => {
  const outputs = () => path.join(process.env.DEER_FLOW_HOME!, "users", "default", "threads", "t6", "user-data", "outputs");
  const sha = (s: string) => createHash("sha256").update(s).digest("hex");
  const url = "/api/threads/t6/artifacts/mnt/user-data/outputs/report.md";

  it("serves a preview range with a SHA-256 ETag, 304 on a match, 416 outside the file", async () => {
    await postJson(`${h.url}/api/threads`, { thread_id: "t6" });
    mkdirSync(outputs(), { recursive: true });
    writeFileSync(path.join(outputs(), "report.md"), "0123456789");
    const part = await fetch(`${h.url}${url}`, { headers: { Range: "bytes=0-3" } });
    expect(part.status).toBe(206);
    expect(part.headers.get("content-range")).toBe("bytes 0-3/10");
    expect(await part.text()).toBe("0123");
    expect(part.headers.get("etag")).toBe(`"${sha("0123456789")}"`);
    const tail = await fetch(`${h.url}${url}`, { headers: { Range: "bytes=-2" } });
    expect(await tail.text()).toBe("89");
    const whole = await fetch(`${h.url}${url}`);
    expect(whole.status).toBe(200);
    expect(whole.headers.get("accept-ranges")).toBe("bytes");
    expect(await whole.text()).toBe("0123456789");
    const cached = await fetch(`${h.url}${url}`, { headers: { "If-None-Match": whole.headers.get("etag")! } });
    expect(cached.status).toBe(304);
    const outside = await fetch(`${h.url}${url}`, { headers: { Range: "bytes=50-60" } });
    expect(outside.status).toBe(416);
    expect(outside.headers.get("content-range")).toBe("bytes */10");
  });

  it("saves an edit atomically when expected_sha256 matches; 412 when the file changed, 400 outside outputs", async () => {
    await postJson(`${h.url}/api/threads`, { thread_id: "t6" });
    mkdirSync(outputs(), { recursive: true });
    writeFileSync(path.join(outputs(), "report.md"), "draft");
    const saved = await send("PUT", url, { content: "final text", expected_sha256: sha("draft") });
    expect(saved.status).toBe(200);
    expect(saved.body).toEqual({ path: "/mnt/user-data/outputs/report.md", sha256: sha("final text"), size: 10 });
    expect(readFileSync(path.join(outputs(), "report.md"), "utf8")).toBe("final text");
    expect(readdirSync(outputs())).toEqual(["report.md"]);
    const stale = await send("PUT", url, { content: "lost update", expected_sha256: sha("draft") });
    expect(stale.status).toBe(412);
    expect(readFileSync(path.join(outputs(), "report.md"), "utf8")).toBe("final text");
    expect((await send("PUT", url, { content: "x", expected_sha256: "nothex" })).status).toBe(422);
    expect((await send("PUT", "/api/threads/t6/artifacts/mnt/user-data/uploads/a.txt", { content: "x", expected_sha256: sha("") })).status).toBe(400);
    expect((await send("PUT", "/api/threads/t6/artifacts/mnt/user-data/outputs/missing.md", { content: "x", expected_sha256: sha("") })).status).toBe(404);
    expect((await send("PUT", "/api/threads/t6/artifacts/mnt/user-data/outputs/../../x", { content: "x", expected_sha256: sha("") })).status).toBeGreaterThanOrEqual(400);
    expect((await send("PUT", "/api/threads/nope/artifacts/mnt/user-data/outputs/report.md", { content: "x", expected_sha256: sha("final text") })).status).toBe(404);
  });
});

describe("regenerate, edit-and-rerun, branch", () => {
  const page = async (threadId: string) => ((await getJson(`/api/threads/${threadId}/messages/page`)).body.data as any[]).map((r) => r.content);
  const texts = (msgs: any[]) => msgs.map((m) => (typeof m.content === "string" ? m.content : m.content.map((b: any) => b.text).join("")));

  it("regenerates the latest answer from the checkpoint before its user message; the old answer leaves the feed", async () => {
    await postJson(`${h.url}/api/threads`, { thread_id: "t7" });
    await chat("t7", "first");
    await chat("t7", "second");
    const before = await page("t7");
    const lastAi = before.at(-1);
    const prepared = await send("POST", "/api/threads/t7/runs/regenerate/prepare", { message_id: lastAi.id });
    expect(prepared.status).toBe(200);
    expect(prepared.body.input.messages).toHaveLength(1);
    expect(prepared.body.input.messages[0]).toMatchObject({ type: "human", id: before.at(-2).id, content: [{ type: "text", text: "second" }] });
    expect(prepared.body.checkpoint).toMatchObject({ checkpoint_ns: "", checkpoint_id: expect.any(String) });
    expect(prepared.body.metadata).toMatchObject({ regenerate_from_message_id: lastAi.id, regenerate_from_run_id: prepared.body.target_run_id });
    // The app submits the prepared input as a run from the prepared checkpoint.
    const rerun = await postJson(`${h.url}/api/threads/t7/runs/wait`, { assistant_id: "lead_agent", input: prepared.body.input, checkpoint: prepared.body.checkpoint, metadata: prepared.body.metadata });
    expect(rerun.status).toBe(200);
    const after = await page("t7");
    expect(texts(after)).toEqual(["first", "You said: first", "second", "You said: second"]);
    expect(after.at(-1).id).not.toBe(lastAi.id);
    // The replayed user message belongs to the new run (the app hides rows of the superseded run).
    const rows = (await getJson("/api/threads/t7/messages/page")).body.data as any[];
    expect(rows.at(-2).run_id).not.toBe(prepared.body.target_run_id);
    expect(rows.at(-2).run_id).toBe(rows.at(-1).run_id);
    expect((await send("POST", "/api/threads/t7/runs/regenerate/prepare", { message_id: after[1].id })).status).toBe(409);
    expect((await send("POST", "/api/threads/t7/runs/regenerate/prepare", { message_id: "nope" })).status).toBe(404);
  });

  it("edits the latest user turn and reruns it under a new message id", async () => {
    await postJson(`${h.url}/api/threads`, { thread_id: "t8" });
    await chat("t8", "hello");
    await chat("t8", "typo here");
    const msgs = await page("t8");
    const human = msgs.at(-2);
    const prepared = await send("POST", "/api/threads/t8/runs/edit-regenerate/prepare", { human_message_id: human.id, replacement_text: "fixed text" });
    expect(prepared.status).toBe(200);
    expect(prepared.body.source_message_ids).toEqual([human.id, msgs.at(-1).id]);
    expect(prepared.body.input.messages[0]).toMatchObject({ id: prepared.body.replacement_human_message_id, content: [{ type: "text", text: "fixed text" }] });
    expect(prepared.body.metadata).toMatchObject({ replay_kind: "edit", edit_from_message_id: human.id });
    await postJson(`${h.url}/api/threads/t8/runs/wait`, { assistant_id: "lead_agent", input: prepared.body.input, checkpoint: prepared.body.checkpoint, metadata: prepared.body.metadata });
    expect(texts(await page("t8"))).toEqual(["hello", "You said: hello", "fixed text", "You said: fixed text"]);
    expect((await send("POST", "/api/threads/t8/runs/edit-regenerate/prepare", { human_message_id: msgs[0].id, replacement_text: "x" })).status).toBe(409);
    const unchanged = await page("t8");
    expect((await send("POST", "/api/threads/t8/runs/edit-regenerate/prepare", { human_message_id: unchanged.at(-2).id, replacement_text: "fixed text" })).status).toBe(409);
  });

  it("branches a new thread from a turn, with the conversation up to it and the thread's files", async () => {
    await postJson(`${h.url}/api/threads`, { thread_id: "t9" });
    await fetch(`${h.url}/api/threads/t9/uploads`, { method: "POST", body: uploadForm("data.txt", "payload") });
    await chat("t9", "alpha");
    await chat("t9", "beta");
    const msgs = await page("t9");
    const firstAi = msgs[1];
    const historical = await send("POST", "/api/threads/t9/branches", { message_id: firstAi.id, message_ids: [firstAi.id] });
    expect(historical.status).toBe(200);
    expect(historical.body).toMatchObject({ parent_thread_id: "t9", branched_from_message_id: firstAi.id, workspace_clone_mode: "skipped_historical_turn", history_seed_mode: "seeded" });
    expect(texts(await page(historical.body.thread_id))).toEqual(["alpha", "You said: alpha"]);

    const latest = await send("POST", "/api/threads/t9/branches", { message_id: msgs.at(-1).id, title: "My branch" });
    expect(latest.body.workspace_clone_mode).toBe("copied");
    const branchId = latest.body.thread_id;
    const thread = await getJson(`/api/threads/${branchId}`);
    expect(thread.body.values.title).toBe("My branch");
    expect(thread.body.metadata).toMatchObject({ branch_parent_thread_id: "t9" });
    expect((await getJson(`/api/threads/${branchId}/uploads/list`)).body.files.map((f: any) => f.filename)).toEqual(["data.txt"]);
    // The branch continues on its own.
    await chat(branchId, "gamma");
    expect(texts(await page(branchId)).slice(-2)).toEqual(["gamma", "You said: gamma"]);
    expect(texts(await page("t9"))).toHaveLength(4);
    expect((await send("POST", "/api/threads/t9/branches", { message_id: msgs[0].id })).status).toBe(409);
    expect((await send("POST", "/api/threads/nope/branches", { message_id: "x" })).status).toBe(404);
  });
});

describe("Settings: skills, MCP, memory", () => {
  const SKILL = (name: string, description: string) => `---\nname: ${name}\ndescription: ${description}\n---\n\n# ${name}\n`;
  const extensionsFile = () => path.join(h.dir, "extensions_config.json");

  it("lists skills, toggles one in extensions_config.json, and edits a custom skill with history and rollback", async () => {
    process.env.DEER_FLOW_PROJECT_ROOT = h.dir;
    process.env.DEER_FLOW_SKILLS_DIR = path.join(h.dir, "skills");
    try {
      mkdirSync(path.join(h.dir, "skills", "public", "web-search"), { recursive: true });
      writeFileSync(path.join(h.dir, "skills", "public", "web-search", "SKILL.md"), SKILL("web-search", "Search the web"));
      const list = await getJson("/api/skills");
      expect(list.body.skills).toEqual([{ name: "web-search", description: "Search the web", license: null, category: "public", enabled: true, editable: false }]);
      const off = await send("PUT", "/api/skills/web-search", { enabled: false });
      expect(off.body).toMatchObject({ name: "web-search", enabled: false });
      expect(JSON.parse(readFileSync(extensionsFile(), "utf8")).skills).toEqual({ "web-search": { enabled: false } });
      expect((await getJson("/api/skills")).body.skills[0].enabled).toBe(false);
      expect((await send("PUT", "/api/skills/nope", { enabled: true })).status).toBe(404);

      const created = await send("POST", "/api/skills/custom", { name: "notes", content: SKILL("notes", "v1") });
      expect(created.body).toMatchObject({ name: "notes", category: "custom", editable: true, content: SKILL("notes", "v1") });
      expect((await send("PUT", "/api/skills/custom/notes", { content: SKILL("notes", "v2") })).body.description).toBe("v2");
      expect((await send("PUT", "/api/skills/custom/notes", { content: "no front matter" })).status).toBe(400);
      expect((await send("PUT", "/api/skills/custom/notes", { content: SKILL("other", "x") })).status).toBe(400);
      const history = await getJson("/api/skills/custom/notes/history");
      expect(history.body.history.map((e: any) => e.action)).toEqual(["human_create", "human_edit"]);
      const rolled = await send("POST", "/api/skills/custom/notes/rollback", {});
      expect(rolled.body.description).toBe("v1");
      expect((await getJson("/api/skills/custom")).body.skills.map((s: any) => s.name)).toEqual(["notes"]);
      expect((await send("DELETE", "/api/skills/custom/notes")).body).toEqual({ success: true });
      expect((await getJson("/api/skills/custom/notes")).status).toBe(404);
      expect((await send("POST", "/api/skills/custom/notes/rollback", { history_index: -1 })).status).toBe(200);
      expect((await getJson("/api/skills/custom/notes")).body.content).toBe(SKILL("notes", "v1"));
    } finally {
      delete process.env.DEER_FLOW_PROJECT_ROOT;
      delete process.env.DEER_FLOW_SKILLS_DIR;
    }
  });

  it("shows MCP servers with secrets masked and keeps stored secrets when the masked value comes back", async () => {
    process.env.DEER_FLOW_PROJECT_ROOT = h.dir;
    try {
      writeFileSync(extensionsFile(), JSON.stringify({ mcpServers: { github: { enabled: true, command: "npx", args: ["gh"], env: { GITHUB_TOKEN: "real-secret" }, headers: { Authorization: "Bearer x" }, api_key: "k", description: "GitHub" } }, skills: { a: { enabled: false } }, custom_top_level: 1 }));
      const got = await getJson("/api/mcp/config");
      expect(got.body.mcp_servers.github).toMatchObject({ enabled: true, command: "npx", env: { GITHUB_TOKEN: "***" }, headers: { Authorization: "***" }, api_key: "***", description: "GitHub" });
      expect(JSON.stringify(got.body)).not.toContain("real-secret");
      // The app sends back what it read, with one change.
      const edited = { mcp_servers: { github: { ...got.body.mcp_servers.github, description: "GitHub tools" } } };
      const put = await send("PUT", "/api/mcp/config", edited);
      expect(put.status).toBe(200);
      expect(put.body.mcp_servers.github.description).toBe("GitHub tools");
      const stored = JSON.parse(readFileSync(extensionsFile(), "utf8"));
      expect(stored.mcpServers.github.env).toEqual({ GITHUB_TOKEN: "real-secret" });
      expect(stored.mcpServers.github.api_key).toBe("k");
      expect(stored.skills).toEqual({ a: { enabled: false } });
      expect(stored.custom_top_level).toBe(1);
      expect(readdirSync(h.dir).filter((f) => f.endsWith(".tmp"))).toEqual([]);
      const patched = await send("PATCH", "/api/mcp/config", { server_name: "github", enabled: false });
      expect(patched.body.mcp_servers.github.enabled).toBe(false);
      expect((await send("PATCH", "/api/mcp/config", { server_name: "nope", enabled: false })).status).toBe(404);
      expect((await send("PUT", "/api/mcp/config", { mcp_servers: { fresh: { command: "x", env: { TOKEN: "***" } } } })).status).toBe(400);
      expect((await send("POST", "/api/mcp/cache/reset")).body.success).toBe(true);
    } finally {
      delete process.env.DEER_FLOW_PROJECT_ROOT;
    }
  });

  it("reads and edits memory facts, exports and imports, clears, and reports config and status", async () => {
    const empty = await getJson("/api/memory");
    expect(empty.body).toMatchObject({ facts: [], user: { workContext: { summary: "" } }, history: { recentMonths: { summary: "" } } });
    // Upstream's MemoryResponse carries the manifest `revision`: 0 before the first write, +1 per write.
    expect(empty.body).toHaveProperty("revision", 0);
    const added = await send("POST", "/api/memory/facts", { content: "Prefers TypeScript", category: "preference", confidence: 0.9 });
    expect(added.body.facts).toEqual([expect.objectContaining({ content: "Prefers TypeScript", category: "preference", confidence: 0.9, source: "manual", createdAt: expect.any(String), id: expect.any(String) })]);
    const id = added.body.facts[0].id;
    const patched = await send("PATCH", `/api/memory/facts/${id}`, { confidence: 0.4 });
    expect(patched.body.facts[0]).toMatchObject({ content: "Prefers TypeScript", confidence: 0.4 });
    expect([added.body.revision, patched.body.revision, (await getJson("/api/memory")).body.revision]).toEqual([1, 2, 2]);
    expect((await send("PATCH", "/api/memory/facts/nope", { confidence: 0.1 })).status).toBe(404);
    expect((await send("POST", "/api/memory/facts", { content: "x", confidence: 2 })).status).toBe(422);
    const exported = await getJson("/api/memory/export");
    exported.body.user.topOfMind.summary = "Shipping the gateway";
    expect((await send("DELETE", "/api/memory")).body.facts).toEqual([]);
    const imported = await send("POST", "/api/memory/import", exported.body);
    expect(imported.body.facts.map((f: any) => f.id)).toEqual([id]);
    expect(imported.body.user.topOfMind.summary).toBe("Shipping the gateway");
    expect((await getJson("/api/memory")).body.user.topOfMind.summary).toBe("Shipping the gateway");
    expect((await send("DELETE", `/api/memory/facts/${id}`)).body.facts).toEqual([]);
    expect((await getJson("/api/memory/config")).body).toMatchObject({ enabled: true, mode: "middleware", injection_enabled: true });
    const status = await getJson("/api/memory/status");
    expect(status.body).toMatchObject({ config: { enabled: true }, data: { facts: [] } });
    expect((await send("POST", "/api/memory/reload")).status).toBe(200);
  });
});

describe("compact", () => {
  it("summarizes all but the kept messages into summary_text with the configured model, keeping the feed readable", async () => {
    await postJson(`${h.url}/api/threads`, { thread_id: "tc" });
    for (const text of ["one", "two", "three"]) await chat("tc", text);
    const nothing = await send("POST", "/api/threads/tc/compact", { force: true, keep: { type: "messages", value: 50 } });
    expect(nothing.body).toMatchObject({ thread_id: "tc", compacted: false, reason: "nothing_to_compact", removed_message_count: 0 });
    const res = await send("POST", "/api/threads/tc/compact", { force: true, keep: { type: "messages", value: 2 } });
    expect(res.status).toBe(200);
    // Cut before the last two messages (the newest turn): the four older messages are summarized away.
    expect(res.body).toMatchObject({ thread_id: "tc", compacted: true, summary_updated: true, removed_message_count: 4, preserved_message_count: 2 });
    const state = (await getJson("/api/threads/tc/state")).body;
    expect(state.checkpoint_id).toBe(res.body.checkpoint_id);
    // The scripted model echoes the summarization prompt: the summary is its deterministic answer.
    expect(state.values.summary_text).toMatch(/^You said: Condense the conversation/);
    expect(state.values.messages.map((m: any) => m.content)).toEqual([[{ type: "text", text: "three" }], "You said: three"]);
    await chat("tc", "four");
    const rows = (await getJson("/api/threads/tc/messages/page")).body.data as any[];
    expect(rows.at(-1).content.content).toBe("You said: four");
    expect((await send("POST", "/api/threads/tc/compact", { keep: { type: "bogus", value: 1 } })).status).toBe(422);
    expect((await send("POST", "/api/threads/missing/compact", {})).status).toBe(404);
  });
});
