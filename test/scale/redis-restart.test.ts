import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort, PROCESS_HOOK_MS, startGateway, type GatewayProcess } from "../support/gateway-process.js";
import { postJson } from "../support/harness.js";
import { startPrivateRedis, type PrivateRedis } from "../support/private-redis.js";
import { createTestDatabase, testPrefix } from "../support/services.js";
import { parseSse, readFramesUntil, type SseFrame } from "../support/sse.js";
import { until } from "../support/wait.js";

// Two gateway processes on PostgreSQL and a Redis of this test's own (append-only file, fsync always), restarted
// while runs stream: every client - on the process running the run and on the other one, reading from Redis -
// gets every event exactly once (reconnecting with Last-Event-ID when a stream closes early), every run finishes,
// and what Redis holds afterwards is exactly what was streamed (docs/durable-runs.md, "Database or Redis down").
const RUNS = 6;
const WORDS = 80;
let dir: string;
let redis: PrivateRedis | undefined;
let db: Awaited<ReturnType<typeof createTestDatabase>> | undefined;
const gateways: GatewayProcess[] = [];

beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), "dfgw-redisdown-"));
  [redis, db] = await Promise.all([startPrivateRedis(dir), createTestDatabase()]);
  const config = path.join(dir, "config.yaml");
  writeFileSync(
    config,
    `models:
  - {name: slow, use: "deerflow-gateway:ScriptedChatModel", model: slow, token_delay_ms: 80}
title: {enabled: false}
database:
  backend: postgres
  url: ${db.url}
stream_bridge:
  type: redis
  url: ${redis.url}
  key_prefix: "${testPrefix()}"
  lease_ms: 20000
`,
  );
  const env = (n: number) => ({ DEER_FLOW_CONFIG_PATH: config, DEER_FLOW_HOME: path.join(dir, `home-${n}`), DEER_FLOW_AGENTS_DIR: path.join(dir, "agents") });
  gateways.push(...(await Promise.all([startGateway(await freePort(), env(1)), startGateway(await freePort(), env(2))])));
}, PROCESS_HOOK_MS);

afterAll(async () => {
  await Promise.all(gateways.map((g) => g.stop("SIGKILL")));
  await redis?.stop();
  await db?.drop();
  rmSync(dir, { recursive: true, force: true });
});

const words = (n: number, tag: string) => Array.from({ length: n }, (_, i) => `${tag}w${i}`).join(" ");
const seqOf = (f: SseFrame) => Number(f.id!.split("-")[1]);

/**
 * A client that follows a run's stream to its `end`: whenever the connection closes early it reconnects (to the
 * other process, alternating) with the last event id it saw. Returns every frame received, in order, and how many
 * connections that took.
 */
async function follow(urls: string[], threadId: string, runId: string, seen: SseFrame[]): Promise<{ frames: SseFrame[]; connections: number }> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const url = urls[attempt % urls.length];
    const last = [...seen].reverse().find((f) => f.id)?.id;
    let res: Response;
    try {
      res = await fetch(`${url}/threads/${threadId}/runs/${runId}/stream`, { headers: last ? { "last-event-id": last } : {} });
    } catch {
      continue;
    }
    if (res.status !== 200) {
      await res.body?.cancel();
      await new Promise((r) => setTimeout(r, 200));
      continue;
    }
    const { frames } = await readFramesUntil(res, (all) => {
      seen.push(...all.splice(0));
      return false;
    });
    seen.push(...frames);
    if (seen.at(-1)?.event === "end") return { frames: seen, connections: attempt + 1 };
  }
  throw new Error(`run ${runId}: no end after 50 connections`);
}

describe("Redis restarted while runs stream on two gateway processes", () => {
  it(
    "every run finishes and every client gets every event exactly once",
    async () => {
      const [a, b] = gateways;
      const runs = await Promise.all(
        Array.from({ length: RUNS }, async (_, i) => {
          const thread = (await (await postJson(`${a.url}/threads`, {})).json()).thread_id as string;
          const body = { input: { messages: [{ role: "user", content: words(WORDS, `r${i}`) }] }, context: { model_name: "slow" }, stream_mode: ["values", "messages-tuple"] };
          const res = await postJson(`${a.url}/threads/${thread}/runs`, body);
          expect(res.status).toBe(200);
          return { thread, runId: (await res.json()).run_id as string, i };
        }),
      );
      // One client on the process running each run (served from memory) and one on the other (served from Redis).
      const local = runs.map(() => [] as SseFrame[]);
      const remote = runs.map(() => [] as SseFrame[]);
      const following = runs.flatMap((r, k) => [follow([a.url, b.url], r.thread, r.runId, local[k]), follow([b.url, a.url], r.thread, r.runId, remote[k])]);
      await until(() => remote.every((f) => f.length >= 3), 60_000, 20);

      await redis!.stop();
      // Runs go on while Redis is down: wait until each has published more events than any client saw from Redis.
      const before = local.map((f) => f.length);
      await until(() => local.every((f, k) => f.length >= before[k] + 20), 30_000, 20);
      await redis!.start();

      const results = await Promise.all(following);
      for (const [k, r] of runs.entries()) {
        const expected = `You said: ${words(WORDS, `r${r.i}`)}`;
        // The stream read from Redis outlived the outage: its process retried the reads, the client never reconnected.
        expect(results[2 * k + 1].connections).toBe(1);
        for (const { frames } of [results[2 * k], results[2 * k + 1]]) {
          const events = frames.filter((f) => f.event !== "end");
          // Exactly once: ids run 0, 1, 2, ... with no gap and no repeat; nothing went wrong.
          expect(events.map(seqOf)).toEqual(events.map((_, n) => n));
          expect(frames.filter((f) => f.event === "error")).toEqual([]);
          const tokens = events.filter((f) => f.event === "messages").map((f) => (f.data as [{ content: string }])[0].content);
          expect(tokens.join("")).toBe(expected);
        }
        // Redis holds exactly what was streamed: a replay from the other process gives the same frames.
        const replay = parseSse(await (await fetch(`${b.url}/threads/${r.thread}/runs/${r.runId}/stream`)).text()).frames;
        expect(replay.map((f) => [f.id, f.event, f.data])).toEqual(results[2 * k].frames.filter((f) => f.event !== "end").map((f) => [f.id, f.event, f.data]).concat([[undefined, "end", null]]));
        for (const g of gateways) expect((await (await fetch(`${g.url}/threads/${r.thread}/runs/${r.runId}`)).json()).status).toBe("success");
      }
      for (const g of gateways) {
        expect(g.child.exitCode).toBeNull();
        expect(g.output()).not.toMatch(/unhandled|redis stream bridge write failed/);
      }
    },
    PROCESS_HOOK_MS,
  );
});
