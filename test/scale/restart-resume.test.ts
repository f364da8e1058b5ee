import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { freePort, PROCESS_HOOK_MS, startGateway, type GatewayProcess } from "../support/gateway-process.js";
import { createTestDatabase } from "../support/services.js";
import { parseSse, readFramesUntil, type SseFrame } from "../support/sse.js";
import { until } from "../support/wait.js";

// One process on SQLite, and one process on PostgreSQL without Redis (docs/durable-runs.md, "One process"): a run a
// crash (SIGKILL) cut short is resumed when the process starts again on the same home, from its last checkpoint,
// with the same run id; at most `stream_bridge.max_resumes` times; a run the user cancelled stays cancelled.
const SHORT = "hello there from a run that a crash will cut short";
const LONG = `${SHORT} and that goes on long enough to be cut twice, ${"word ".repeat(40)}end`;
let dir: string;
let gateway: GatewayProcess | undefined;
let db: Awaited<ReturnType<typeof createTestDatabase>> | undefined;

const CONFIG = `models:\n  - {name: slow, use: "deerflow-gateway:ScriptedChatModel", model: slow, token_delay_ms: 120}\ntitle: {enabled: false}\nstream_bridge: {type: memory, max_resumes: 1}\n`;

/** Writes config.yaml for the backend: SQLite under the home, or a fresh PostgreSQL database (no Redis either way). */
async function setUp(backend: "sqlite" | "postgres") {
  dir = mkdtempSync(path.join(tmpdir(), "dfgw-restart-"));
  db = backend === "postgres" ? await createTestDatabase() : undefined;
  writeFileSync(path.join(dir, "config.yaml"), db ? `${CONFIG}database: {backend: postgres, url: "${db.url}"}\n` : CONFIG);
}
afterEach(async () => {
  await gateway?.stop("SIGKILL");
  gateway = undefined;
  await db?.drop();
  db = undefined;
  rmSync(dir, { recursive: true, force: true });
});

const start = async () => (gateway = await startGateway(await freePort(), { DEER_FLOW_CONFIG_PATH: path.join(dir, "config.yaml"), DEER_FLOW_HOME: path.join(dir, "home"), DEER_FLOW_AGENTS_DIR: path.join(dir, "agents") }));
const post = (url: string, body: unknown) => fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
const json = async (url: string) => (await fetch(url)).json();
const tokens = (frames: SseFrame[]) => frames.filter((f) => f.event === "messages");

/** Starts a background run on a new thread; resolves once `count` tokens of it were streamed. */
async function startRun(g: GatewayProcess, content: string, count: number) {
  const thread = (await (await post(`${g.url}/threads`, {})).json()).thread_id as string;
  const run = await (await post(`${g.url}/threads/${thread}/runs`, { input: { messages: [{ role: "user", content }] }, stream_mode: ["messages-tuple", "values"] })).json();
  const live = await readFramesUntil(await fetch(`${g.url}/threads/${thread}/runs/${run.run_id}/stream`), (frames) => tokens(frames).length >= count);
  await live.cancel();
  return { thread, runId: run.run_id as string, lastEventId: live.frames.at(-1)!.id! };
}

describe.each(["sqlite", "postgres"] as const)("one process on %s: runs resumed after a crash", (backend) => {
  it(
    "resumes a killed run on restart (same id, its answer whole once), never a cancelled one, and stops at max_resumes",
    async () => {
      await setUp(backend);
      let g = await start();
      const a = await startRun(g, SHORT, 3);
      const b = await startRun(g, LONG, 3);
      const c = await startRun(g, SHORT, 2);
      expect((await fetch(`${g.url}/threads/${c.thread}/runs/${c.runId}/cancel?wait=1&action=interrupt`, { method: "POST" })).status).toBe(204);
      await g.stop("SIGKILL");

      g = await start();
      // A client reconnecting with the id it had from the dead process gets the rest of the run and a final end.
      const res = await fetch(`${g.url}/threads/${a.thread}/runs/${a.runId}/stream`, { headers: { "last-event-id": a.lastEventId } });
      const frames = parseSse(await res.text()).frames;
      expect(frames[0]).toMatchObject({ event: "metadata", data: { run_id: a.runId, attempt: 2 } });
      expect(frames.map((f) => f.event)).not.toContain("error");
      expect(frames.at(-1)!.event).toBe("end");
      const runA = await json(`${g.url}/threads/${a.thread}/runs/${a.runId}`);
      expect(runA).toMatchObject({ status: "success", metadata: { resumed: 1 } });
      const stateA = await json(`${g.url}/threads/${a.thread}/state`);
      expect(stateA.values.messages.map((m: any) => [m.type, m.content])).toEqual([
        ["human", SHORT],
        ["ai", `You said: ${SHORT}`],
      ]);
      // The cancelled run stays interrupted; nothing of it ran again.
      expect((await json(`${g.url}/threads/${c.thread}/runs/${c.runId}`)).status).toBe("interrupted");
      expect((await json(`${g.url}/threads/${c.thread}/runs`)).length).toBe(1);

      // The long run was resumed too; killed once more it has used its one resume, and ends as error with the reason.
      await until(async () => (await json(`${g.url}/threads/${b.thread}/runs/${b.runId}`)).metadata?.resumed === 1, 30_000);
      await readFramesUntil(await fetch(`${g.url}/threads/${b.thread}/runs/${b.runId}/stream`), (f) => tokens(f).length >= 3).then((live) => live.cancel());
      await g.stop("SIGKILL");
      g = await start();
      const runB = await json(`${g.url}/threads/${b.thread}/runs/${b.runId}`);
      expect(runB.status).toBe("error");
      expect(runB.error).toContain("already resumed 1 time (stream_bridge.max_resumes)");
      const framesB = parseSse(await (await fetch(`${g.url}/threads/${b.thread}/runs/${b.runId}/stream`)).text()).frames;
      expect(framesB.map((f) => [f.event, f.data?.name])).toEqual([
        ["error", "ResumeLimitExceeded"],
        ["end", undefined],
      ]);
      expect((await json(`${g.url}/threads/${b.thread}`)).status).toBe("idle");
    },
    PROCESS_HOOK_MS * 3,
  );
});
