import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort, PROCESS_HOOK_MS, startGateway, type GatewayProcess } from "../support/gateway-process.js";
import { postJson } from "../support/harness.js";
import { createTestDatabase, sharedSections, testPrefix } from "../support/services.js";
import { parseSse, readFramesUntil, type SseFrame } from "../support/sse.js";
import { until } from "../support/wait.js";

// Two real gateway processes (src/server.ts) on one PostgreSQL database and one Redis, sharing DEER_FLOW_HOME:
// whichever process a request lands on, runs, streams, cancels and multitask strategies behave as one service.
const LEASE_MS = 3_000;
let db: Awaited<ReturnType<typeof createTestDatabase>>;
let dir: string;
let env: Record<string, string>;
let a: GatewayProcess;
let b: GatewayProcess;
const started: GatewayProcess[] = [];

async function gateway(): Promise<GatewayProcess> {
  const g = await startGateway(await freePort(), env);
  started.push(g);
  return g;
}

beforeAll(async () => {
  db = await createTestDatabase();
  dir = mkdtempSync(path.join(tmpdir(), "dfgw-scale-"));
  const config = path.join(dir, "config.yaml");
  writeFileSync(
    config,
    `models:
  - name: scripted
    use: deerflow-gateway:ScriptedChatModel
    model: s
  - name: slow
    use: deerflow-gateway:ScriptedChatModel
    model: slow
    token_delay_ms: 100
${sharedSections(db.url, testPrefix(), LEASE_MS)}`,
  );
  env = { DEER_FLOW_CONFIG_PATH: config, DEER_FLOW_HOME: path.join(dir, "home"), DEER_FLOW_AGENTS_DIR: path.join(dir, "agents") };
  [a, b] = await Promise.all([gateway(), gateway()]);
}, PROCESS_HOOK_MS);

afterAll(async () => {
  await Promise.all(started.map((g) => g.stop("SIGKILL")));
  await db?.drop();
  rmSync(dir, { recursive: true, force: true });
});

const words = (n: number) => Array.from({ length: n }, (_, i) => `w${i}`).join(" ");
const slowRun = (n: number, extra: Record<string, unknown> = {}) => ({
  input: { messages: [{ type: "human", content: words(n) }] },
  context: { model_name: "slow" },
  stream_mode: ["values", "messages-tuple"],
  ...extra,
});

async function newThread(on: GatewayProcess): Promise<string> {
  const res = await postJson(`${on.url}/threads`, {});
  expect(res.status).toBe(200);
  return (await res.json()).thread_id;
}

async function startRun(on: GatewayProcess, threadId: string, body: Record<string, unknown>): Promise<any> {
  const res = await postJson(`${on.url}/threads/${threadId}/runs`, body);
  expect(res.status).toBe(200);
  return res.json();
}

const getRun = async (on: GatewayProcess, threadId: string, runId: string) => (await fetch(`${on.url}/threads/${threadId}/runs/${runId}`)).json();
const getThread = async (on: GatewayProcess, threadId: string) => (await fetch(`${on.url}/threads/${threadId}`)).json();
/** Every retained event of a run, replayed from `on` (the stream ends when the run has ended). */
async function replay(on: GatewayProcess, threadId: string, runId: string, lastEventId?: string): Promise<SseFrame[]> {
  const res = await fetch(`${on.url}/threads/${threadId}/runs/${runId}/stream`, { headers: lastEventId ? { "last-event-id": lastEventId } : {} });
  return parseSse(await res.text()).frames;
}
const seqOf = (f: SseFrame) => Number(f.id!.split("-")[1]);
/** The text the run's AI message streamed, from its `messages` frames. */
const streamedText = (frames: SseFrame[]) =>
  frames
    .filter((f) => f.event === "messages" && (f.data?.[0]?.type === "AIMessageChunk" || f.data?.[0]?.type === "ai"))
    .map((f) => f.data[0].content)
    .join("");

describe("two gateway processes on one PostgreSQL and one Redis", () => {
  it("shares threads and runs: a run started on A is joined from B, and B replays it after Last-Event-ID", async () => {
    const threadId = await newThread(a);
    expect((await getThread(b, threadId)).thread_id).toBe(threadId);
    const run = await startRun(a, threadId, slowRun(12));
    // B follows the run live from Redis, drops after a few events, then resumes strictly after the last one seen.
    const first = await readFramesUntil(await fetch(`${b.url}/threads/${threadId}/runs/${run.run_id}/stream`), (f) => f.length >= 4);
    await first.cancel();
    expect(first.frames[0]).toMatchObject({ event: "metadata", data: { run_id: run.run_id, thread_id: threadId } });
    const rest = await replay(b, threadId, run.run_id, first.frames.at(-1)!.id);
    expect(rest.at(-1)).toEqual({ event: "end", data: null });
    const all = await replay(b, threadId, run.run_id);
    expect([...first.frames, ...rest]).toEqual(all);
    expect(all.slice(0, -1).map(seqOf)).toEqual(all.slice(0, -1).map((_, i) => i));
    expect(streamedText(all)).toContain("You said: w0");
    // join on B answers the final state once A's run has finished; the record is the same on both.
    const joined = await (await fetch(`${b.url}/threads/${threadId}/runs/${run.run_id}/join`)).json();
    expect(joined.messages.at(-1).content).toBe(`You said: ${words(12)}`);
    expect((await getRun(b, threadId, run.run_id)).status).toBe("success");
    expect((await getRun(a, threadId, run.run_id)).status).toBe("success");
    expect((await getThread(b, threadId)).status).toBe("idle");
  });

  it("cancel on B stops the run on A: interrupted at once, no event after the answer, thread idle", async () => {
    const threadId = await newThread(a);
    const run = await startRun(a, threadId, slowRun(40));
    const live = await readFramesUntil(await fetch(`${b.url}/threads/${threadId}/runs/${run.run_id}/stream`), (f) => f.filter((x) => x.event === "messages").length >= 3);
    await live.cancel();
    const res = await fetch(`${b.url}/threads/${threadId}/runs/${run.run_id}/cancel`, { method: "POST" });
    expect(res.status).toBe(202);
    // A confirmed the abort before B answered, and stored the status.
    expect((await getRun(b, threadId, run.run_id)).status).toBe("interrupted");
    const atCancel = await replay(b, threadId, run.run_id);
    // Once the thread is idle on A the run has let go of it: nothing more can be published for it.
    await until(async () => (await getThread(a, threadId)).status === "idle", 5_000);
    await until(async () => (await getThread(b, threadId)).status === "idle", 5_000);
    const later = await replay(b, threadId, run.run_id);
    expect(later).toEqual(atCancel);
    expect(later.at(-1)).toEqual({ event: "end", data: null });
    expect(streamedText(later).length).toBeLessThan(`You said: ${words(40)}`.length);
  });

  it("reject answers 409 on B while A runs; enqueue on B waits for A's run, then runs", async () => {
    const threadId = await newThread(a);
    const first = await startRun(a, threadId, slowRun(10));
    const rejected = await postJson(`${b.url}/threads/${threadId}/runs`, { ...slowRun(1), multitask_strategy: "reject" });
    expect(rejected.status).toBe(409);
    expect((await rejected.json()).detail).toBe(`Thread ${threadId} already has an active run`);
    const queued = await startRun(b, threadId, { input: { messages: [{ type: "human", content: "next" }] }, multitask_strategy: "enqueue" });
    expect((await getRun(a, threadId, queued.run_id)).status).toBe("pending");
    const final = await (await fetch(`${a.url}/threads/${threadId}/runs/${queued.run_id}/join`)).json();
    expect(final.messages.map((m: any) => m.content)).toEqual([words(10), `You said: ${words(10)}`, "next", "You said: next"]);
    const firstRecord = await getRun(b, threadId, first.run_id);
    expect(firstRecord.status).toBe("success");
    expect((await getRun(a, threadId, queued.run_id)).status).toBe("success");
    // The queued run's first event came after the first run had ended: its metadata follows the whole first run.
    expect((await replay(a, threadId, queued.run_id))[0].event).toBe("metadata");
  });

  it("interrupt on B cancels A's run and starts after it; delete on B is refused while A runs", async () => {
    const threadId = await newThread(a);
    const first = await startRun(a, threadId, slowRun(40));
    await until(async () => (await getRun(b, threadId, first.run_id)).status === "running", 5_000);
    const del = await fetch(`${b.url}/threads/${threadId}`, { method: "DELETE" });
    expect(del.status).toBe(409);
    const second = await startRun(b, threadId, { input: { messages: [{ type: "human", content: "after" }] }, multitask_strategy: "interrupt" });
    const final = await (await fetch(`${b.url}/threads/${threadId}/runs/${second.run_id}/join`)).json();
    expect(final.messages.at(-1).content).toBe("You said: after");
    expect((await getRun(a, threadId, first.run_id)).status).toBe("interrupted");
  });

  it("a SIGKILLed process's run is resumed on B within the lease: its follower gets the rest and the end, B serves the next run", async () => {
    const threadId = await newThread(a);
    const run = await startRun(a, threadId, slowRun(30));
    await until(async () => (await getRun(b, threadId, run.run_id)).status === "running", 5_000);
    const follower = fetch(`${b.url}/threads/${threadId}/runs/${run.run_id}/stream`).then(async (r) => parseSse(await r.text()).frames);
    await a.stop("SIGKILL");
    // A follower on B gets the resumed run's events and the end instead of waiting forever (docs/durable-runs.md).
    const frames = await follower;
    expect(frames.filter((f) => f.event === "metadata").map((f) => f.data.attempt)).toEqual([1, 2]);
    expect(frames.some((f) => f.event === "error")).toBe(false);
    expect(frames.at(-1)).toEqual({ event: "end", data: null });
    expect((await getRun(b, threadId, run.run_id)).status).toBe("success");
    expect((await getThread(b, threadId)).status).toBe("idle");
    const next = await postJson(`${b.url}/threads/${threadId}/runs/wait`, { input: { messages: [{ type: "human", content: "again" }] }, multitask_strategy: "reject" });
    expect(next.status).toBe(200);
    expect((await next.json()).messages.at(-1).content).toBe("You said: again");
    a = await gateway();
  });

  it("SIGTERM of A mid-stream: the client reconnects to B and gets every remaining event exactly once", async () => {
    const threadId = await newThread(a);
    const res = await postJson(`${a.url}/threads/${threadId}/runs/stream`, { ...slowRun(25), stream_mode: ["values", "messages-tuple"] });
    const location = res.headers.get("content-location")!;
    const onA = await readFramesUntil(res, (f) => f.filter((x) => x.event === "messages").length >= 3);
    const exit = a.stop("SIGTERM");
    // A cuts the stream without `end` (the client sees the connection close) and keeps running the run.
    const tail = await readFramesUntil(res, () => false).catch(() => ({ frames: [] as SseFrame[] }));
    const fromA = [...onA.frames, ...tail.frames];
    expect(fromA.some((f) => f.event === "end")).toBe(false);
    const resumed = await fetch(`${b.url}${location}/stream`, { headers: { "last-event-id": fromA.at(-1)!.id! } });
    const fromB = parseSse(await resumed.text()).frames;
    expect(await exit).toBe(0);
    expect(fromB.at(-1)).toEqual({ event: "end", data: null });
    const received = [...fromA, ...fromB.slice(0, -1)];
    expect(received.map(seqOf)).toEqual(received.map((_, i) => i));
    expect(streamedText(received)).toBe(`You said: ${words(25)}`);
    const runId = location.split("/").at(-1)!;
    expect((await getRun(b, threadId, runId)).status).toBe("success");
    a = await gateway();
  });
});
