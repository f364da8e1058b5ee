import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort, startGateway } from "../support/gateway-process.js";
import { postJson } from "../support/harness.js";
import { createTestDatabase, sharedSections, testPrefix } from "../support/services.js";
import { until } from "../support/wait.js";

// `WORKERS=N npm start`: node:cluster workers sharing one port, only on shared stores.
const MODELS = "models:\n  - name: scripted\n    use: deerflow-gateway:ScriptedChatModel\n    model: s\n";
let db: Awaited<ReturnType<typeof createTestDatabase>>;
let dir: string;
beforeAll(async () => {
  db = await createTestDatabase();
  dir = mkdtempSync(path.join(tmpdir(), "dfgw-cluster-"));
});
afterAll(async () => {
  await db?.drop();
  rmSync(dir, { recursive: true, force: true });
});

const envFor = (config: string) => ({ DEER_FLOW_CONFIG_PATH: config, DEER_FLOW_HOME: path.join(dir, "home"), DEER_FLOW_AGENTS_DIR: path.join(dir, "agents"), WORKERS: "2", LOG_LEVEL: "info" });

describe("cluster mode", () => {
  it("refuses WORKERS=2 on SQLite and the in-memory bridge, saying what to configure", async () => {
    const config = path.join(dir, "local.yaml");
    writeFileSync(config, MODELS);
    const err = await startGateway(await freePort(), envFor(config)).then(
      () => null,
      (e: Error) => e.message,
    );
    expect(err).toContain("WORKERS=2 needs runs shared between processes");
    expect(err).toContain("stream_bridge: {type: redis");
    expect(err).toContain("database: {backend: postgres");
  }, 90_000);

  it("runs two workers on one port with Redis and PostgreSQL; every request is served, SIGTERM stops them all", async () => {
    const config = path.join(dir, "shared.yaml");
    writeFileSync(config, MODELS + sharedSections(db.url, testPrefix()));
    const g = await startGateway(await freePort(), envFor(config));
    try {
      await until(async () => (g.output().match(/deerflow-gateway ready/g) ?? []).length === 2, 30_000, 100);
      // Both workers came up first time (none died and was replaced).
      const workers = new Set([...g.output().matchAll(/"worker":(\d+)/g)].map((m) => m[1]));
      expect(workers, g.output()).toEqual(new Set(["1", "2"]));
      const results = await Promise.all(
        Array.from({ length: 8 }, async (_, i) => {
          const thread = await (await postJson(`${g.url}/threads`, {})).json();
          const res = await postJson(`${g.url}/threads/${thread.thread_id}/runs/wait`, { input: { messages: [{ type: "human", content: `n${i}` }] } });
          return (await res.json()).messages.at(-1).content;
        }),
      );
      expect(results).toEqual(Array.from({ length: 8 }, (_, i) => `You said: n${i}`));
      // Whichever worker answers, /metrics counts the whole service (the primary sums both workers' registries).
      for (let i = 0; i < 4; i++) {
        const text = await (await fetch(`${g.url}/metrics`)).text();
        const finished = [...text.matchAll(/^deerflow_runs_finished_total\{[^}]*\} (\d+)$/gm)].reduce((sum, m) => sum + Number(m[1]), 0);
        expect(finished, text.slice(0, 500)).toBe(8);
      }
    } finally {
      expect(await g.stop("SIGTERM")).toBe(0);
    }
  }, 90_000);
});
