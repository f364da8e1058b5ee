// DingTalk across two gateway processes on one PostgreSQL, one Redis and a shared DEER_FLOW_HOME: the Stream
// connection is held by one process at a time (the `dingtalk-stream:*` lease), and the other takes it over when the
// holder stops; messages are answered once either way.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { dingtalkText, startDingTalkFake, type DingTalkFake } from "../support/fakes/dingtalk.js";
import { freePort, startGateway, type GatewayProcess } from "../support/gateway-process.js";
import { createTestDatabase, sharedSections, testPrefix } from "../support/services.js";
import { until } from "../support/wait.js";

let db: Awaited<ReturnType<typeof createTestDatabase>>;
let dir: string;
let fake: DingTalkFake;

beforeAll(async () => {
  db = await createTestDatabase();
  dir = mkdtempSync(path.join(tmpdir(), "dfgw-scale-dingtalk-"));
  fake = await startDingTalkFake();
  const yaml = `models:\n  - name: s\n    use: deerflow-gateway:ScriptedChatModel\n    model: s\nchannels:\n  dingtalk:\n    enabled: true\n    client_id: ${fake.clientId}\n    client_secret: ${fake.clientSecret}\n    api_base: ${fake.url}\nchannel_connections:\n  enabled: true\n  dingtalk:\n    enabled: true\n${sharedSections(db.url, testPrefix())}`;
  writeFileSync(path.join(dir, "config.yaml"), yaml);
}, 120_000);
afterAll(async () => {
  await fake?.close();
  await db?.drop();
  rmSync(dir, { recursive: true, force: true });
});

describe("DingTalk across two processes", () => {
  it("holds the Stream connection in one process; the other takes it over when the holder stops", async () => {
    const env = { DEER_FLOW_CONFIG_PATH: path.join(dir, "config.yaml"), DEER_FLOW_HOME: path.join(dir, "home"), DEER_FLOW_AGENTS_DIR: path.join(dir, "agents"), DEER_FLOW_AUTH_DISABLED: "1", AUTH_JWT_SECRET: "" };
    let q: GatewayProcess | undefined;
    // P starts first, so P is the holder when Q starts.
    const p = await startGateway(await freePort(), env);
    try {
      await until(() => fake.connections() === 1, 15_000);
      q = await startGateway(await freePort(), env);
      fake.push(dingtalkText("m-1", "staff-x", "held once"));
      await until(() => fake.sent.some((s) => s.text === "You said: held once"), 15_000);
      expect(fake.accepted()).toBe(1);
      await p.stop("SIGTERM");
      await until(() => fake.accepted() === 2 && fake.connections() === 1, 30_000);
      fake.push(dingtalkText("m-2", "staff-x", "after the handover"));
      await until(() => fake.sent.some((s) => s.text === "You said: after the handover"), 15_000);
      for (const text of ["You said: held once", "You said: after the handover"]) expect(fake.sent.filter((s) => s.text === text)).toHaveLength(1);
    } finally {
      await Promise.all([p.stop("SIGKILL"), q?.stop("SIGKILL")]);
    }
  }, 150_000);
});
