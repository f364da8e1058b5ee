import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort, startGateway, type GatewayProcess } from "../support/gateway-process.js";
import { postJson } from "../support/harness.js";
import { createTestDatabase, sharedSections, testPrefix } from "../support/services.js";
import { parseSse, readFramesUntil, type SseFrame } from "../support/sse.js";
import { until } from "../support/wait.js";

// Durable runs (docs/durable-runs.md) with real gateway processes (src/server.ts) on one PostgreSQL and one Redis:
// a SIGTERM lets runs finish and hands the rest over, a SIGKILLed process's runs are resumed elsewhere from their
// last checkpoint with the same run id, at most `max_resumes` times; a cancel racing a resume wins.
const LEASE_MS = 2_000;
const MAX_RESUMES = 1;
let db: Awaited<ReturnType<typeof createTestDatabase>>;
let dir: string;
let env: Record<string, string>;
let config: (prefix: string) => string;
// b survives every test; each other test kills processes of its own (tests run in any order).
let a: GatewayProcess;
let b: GatewayProcess;
let leaving: GatewayProcess;
let killed: GatewayProcess;
let victim: GatewayProcess;
const started: GatewayProcess[] = [];

async function gateway(extra: Record<string, string> = {}): Promise<GatewayProcess> {
  const g = await startGateway(await freePort(), { ...env, ...extra });
  started.push(g);
  return g;
}

beforeAll(async () => {
  db = await createTestDatabase();
  dir = mkdtempSync(path.join(tmpdir(), "dfgw-durable-"));
  config = (prefix: string) => {
    const file = path.join(dir, `config-${prefix.replace(/\W/g, "")}.yaml`);
    writeFileSync(
      file,
      `models:
  - name: slow
    use: deerflow-gateway:ScriptedChatModel
    model: slow
    token_delay_ms: 100
${sharedSections(db.url, prefix, LEASE_MS)}  max_resumes: ${MAX_RESUMES}
`,
    );
    return file;
  };
  env = { DEER_FLOW_CONFIG_PATH: config(testPrefix()), DEER_FLOW_HOME: path.join(dir, "home"), DEER_FLOW_AGENTS_DIR: path.join(dir, "agents") };
  [a, b, leaving, killed, victim] = await Promise.all([gateway(), gateway(), gateway({ DEER_FLOW_SHUTDOWN_GRACE_SECONDS: "0" }), gateway(), gateway()]);
}, 400_000);

afterAll(async () => {
  await Promise.all(started.map((g) => g.stop("SIGKILL")));
  await db?.drop();
  rmSync(dir, { recursive: true, force: true });
});

const words = (n: number) => Array.from({ length: n }, (_, i) => `w${i}`).join(" ");
const slowRun = (n: number) => ({ input: { messages: [{ type: "human", content: words(n) }] }, context: { model_name: "slow" }, stream_mode: ["values", "messages-tuple"] });

async function newThread(on: GatewayProcess): Promise<string> {
  const res = await postJson(`${on.url}/threads`, {});
  expect(res.status).toBe(200);
  return (await res.json()).thread_id;
}
async function startRun(on: GatewayProcess, threadId: string, body: Record<string, unknown>): Promise<{ run_id: string }> {
  const res = await postJson(`${on.url}/threads/${threadId}/runs`, body);
  expect(res.status).toBe(200);
  return res.json();
}
const getRun = async (on: GatewayProcess, threadId: string, runId: string) => (await fetch(`${on.url}/threads/${threadId}/runs/${runId}`)).json();
const stateOf = async (on: GatewayProcess, threadId: string) => (await fetch(`${on.url}/threads/${threadId}/state`)).json();
async function replay(on: GatewayProcess, threadId: string, runId: string, lastEventId?: string): Promise<SseFrame[]> {
  const res = await fetch(`${on.url}/threads/${threadId}/runs/${runId}/stream`, { headers: lastEventId ? { "last-event-id": lastEventId } : {} });
  return parseSse(await res.text()).frames;
}
const seqOf = (f: SseFrame) => Number(f.id!.split("-")[1]);
const streamedText = (frames: SseFrame[]) =>
  frames
    .filter((f) => f.event === "messages" && (f.data?.[0]?.type === "AIMessageChunk" || f.data?.[0]?.type === "ai"))
    .map((f) => f.data[0].content)
    .join("");
const attempts = (frames: SseFrame[]) => frames.filter((f) => f.event === "metadata").map((f) => f.data.attempt);
/** The thread's messages as `type: content`, to see that nothing was run twice into the state. */
/** Whether `g` logged that it resumed `runId`. */
const resumedHere = (g: GatewayProcess, runId: string) => g.output().split("\n").some((line) => line.includes(runId) && line.includes("resuming a run"));
const transcript = async (on: GatewayProcess, threadId: string) => (await stateOf(on, threadId)).values.messages.map((m: any) => `${m.type}: ${m.content}`);

describe("durable runs across two gateway processes", () => {
  it("SIGTERM during 20 concurrent streams: runs finish in the grace, every client gets its whole answer exactly once from the other process", async () => {
    const n = 20;
    const threads = await Promise.all(Array.from({ length: n }, () => newThread(a)));
    const streams = await Promise.all(threads.map((t, i) => postJson(`${a.url}/threads/${t}/runs/stream`, slowRun(60 + i))));
    const firsts = await Promise.all(streams.map((res) => readFramesUntil(res, (f) => f.filter((x) => x.event === "messages").length >= 2)));
    // Not stop(): it SIGKILLs after 15 s, and these runs may take longer on a loaded machine (the grace is 60 s).
    a.child.kill("SIGTERM");
    const results = await Promise.all(
      streams.map(async (res, i) => {
        const tail = await readFramesUntil(res, () => false).catch(() => ({ frames: [] as SseFrame[] }));
        const fromA = [...firsts[i].frames, ...tail.frames];
        expect(fromA.some((f) => f.event === "end")).toBe(false);
        const location = res.headers.get("content-location")!;
        const resumed = await fetch(`${b.url}${location}/stream`, { headers: { "last-event-id": fromA.at(-1)!.id! } });
        const fromB = parseSse(await resumed.text()).frames;
        return { fromA, fromB, runId: location.split("/").at(-1)! };
      }),
    );
    expect(await a.exited).toBe(0);
    for (const [i, { fromA, fromB, runId }] of results.entries()) {
      expect(fromB.at(-1)).toEqual({ event: "end", data: null });
      const received = [...fromA, ...fromB.slice(0, -1)];
      expect(received.map(seqOf)).toEqual(received.map((_, k) => k));
      expect(streamedText(received)).toBe(`You said: ${words(60 + i)}`);
      expect(attempts(received)).toEqual([1]);
      expect((await getRun(b, threads[i], runId)).status).toBe("success");
    }
  }, 120_000);

  it("SIGTERM past the grace hands the run over: the other process resumes it from its checkpoint and the client gets the rest", async () => {
    const threadId = await newThread(leaving);
    const res = await postJson(`${leaving.url}/threads/${threadId}/runs/stream`, slowRun(40));
    const runId = res.headers.get("content-location")!.split("/").at(-1)!;
    const first = await readFramesUntil(res, (f) => f.filter((x) => x.event === "messages").length >= 3);
    const exit = leaving.stop("SIGTERM");
    // The leaving process cuts the stream without `end`; the client reconnects to another with Last-Event-ID.
    const tail = await readFramesUntil(res, () => false).catch(() => ({ frames: [] as SseFrame[] }));
    const onLeaving = { frames: [...first.frames, ...tail.frames] };
    expect(onLeaving.frames.some((f) => f.event === "end")).toBe(false);
    const rest = await replay(b, threadId, runId, onLeaving.frames.at(-1)!.id);
    expect(await exit).toBe(0);
    expect(rest.at(-1)).toEqual({ event: "end", data: null });
    const received = [...onLeaving.frames, ...rest.slice(0, -1)];
    expect(received.map(seqOf)).toEqual(received.map((_, k) => k));
    expect(received.some((f) => f.event === "error")).toBe(false);
    // The model step under way was run again after a metadata frame that says so; the state has the answer once.
    expect(attempts(received)).toEqual([1, 2]);
    const run = await getRun(b, threadId, runId);
    expect(run.status).toBe("success");
    expect(run.metadata.resumed).toBe(1);
    expect(await transcript(b, threadId)).toEqual([`human: ${words(40)}`, `ai: You said: ${words(40)}`]);
  }, 60_000);

  it("SIGKILL of the process running 10 runs: all are resumed on the other, once each, and finish", async () => {
    const threads = await Promise.all(Array.from({ length: 10 }, () => newThread(killed)));
    const runs = await Promise.all(threads.map((t) => startRun(killed, t, slowRun(30))));
    await until(async () => (await Promise.all(runs.map((r, i) => getRun(b, threads[i], r.run_id)))).every((r) => r.status === "running"), 10_000);
    await killed.stop("SIGKILL");
    await until(async () => (await Promise.all(runs.map((r, i) => getRun(b, threads[i], r.run_id)))).every((r) => r.status === "success"), 30_000, 200);
    for (const [i, { run_id }] of runs.entries()) {
      const frames = await replay(b, threads[i], run_id);
      // One process took each run over: one second attempt, ids without a gap or a repeat.
      expect(attempts(frames)).toEqual([1, 2]);
      expect(frames.slice(0, -1).map(seqOf)).toEqual(frames.slice(0, -1).map((_, k) => k));
      expect((await getRun(b, threads[i], run_id)).metadata.resumed).toBe(1);
      expect(await transcript(b, threads[i])).toEqual([`human: ${words(30)}`, `ai: You said: ${words(30)}`]);
    }
  }, 90_000);

  it("a cancel that races the resume wins: the run stays interrupted and is never run again", async () => {
    const threadId = await newThread(victim);
    const { run_id: runId } = await startRun(victim, threadId, slowRun(100));
    await until(async () => (await getRun(b, threadId, runId)).status === "running", 10_000);
    await victim.stop("SIGKILL");
    // Before any process has seen the death: the cancel's mark is in Redis when the resume would claim the run.
    const res = await fetch(`${b.url}/threads/${threadId}/runs/${runId}/cancel`, { method: "POST" });
    expect(res.status).toBe(202);
    const frames = await replay(b, threadId, runId);
    expect(frames.at(-1)).toEqual({ event: "end", data: null });
    expect(attempts(frames)).toEqual([1]);
    expect((await getRun(b, threadId, runId)).status).toBe("interrupted");
    expect(started.some((g) => resumedHere(g, runId))).toBe(false);
    expect((await (await fetch(`${b.url}/threads/${threadId}`)).json()).status).toBe("idle");
  }, 60_000);
});

describe("a run whose process keeps dying", () => {
  // A cluster of its own (another key prefix on the same database): whichever process resumes the run is killed.
  let cluster: GatewayProcess[];
  beforeAll(async () => {
    const own = { DEER_FLOW_CONFIG_PATH: config(testPrefix()) };
    cluster = await Promise.all([gateway(own), gateway(own), gateway(own)]);
  }, 400_000);

  it(`is resumed ${MAX_RESUMES} time(s) (stream_bridge.max_resumes), then marked error with the reason`, async () => {
    const [first] = cluster;
    const threadId = await newThread(first);
    const { run_id: runId } = await startRun(first, threadId, slowRun(300));
    await until(async () => (await getRun(first, threadId, runId)).status === "running", 10_000);
    await first.stop("SIGKILL");
    // The process that took the run over logs it; that one is killed in turn.
    const resumedBy = () => cluster.find((g) => g !== first && resumedHere(g, runId));
    await until(() => resumedBy() !== undefined, 15_000, 100);
    const holder = resumedBy()!;
    const survivor = cluster.find((g) => g !== first && g !== holder)!;
    const live = await readFramesUntil(await fetch(`${survivor.url}/threads/${threadId}/runs/${runId}/stream`), (f) => attempts(f).includes(2));
    await live.cancel();
    await holder.stop("SIGKILL");
    await until(async () => (await getRun(survivor, threadId, runId)).status === "error", 20_000, 200).catch((err) => {
      throw new Error(`${(err as Error).message}\n${survivor.output()}\n---\n${holder.output()}`);
    });
    expect((await getRun(survivor, threadId, runId)).error).toContain("already resumed 1 time");
    const frames = await replay(survivor, threadId, runId);
    expect(attempts(frames)).toEqual([1, 2]);
    expect(frames.at(-2)).toMatchObject({ event: "error", data: { error: "ResumeLimitExceeded" } });
    expect(frames.at(-1)).toEqual({ event: "end", data: null });
    expect((await (await fetch(`${survivor.url}/threads/${threadId}`)).json()).status).toBe("idle");
  }, 90_000);
});
