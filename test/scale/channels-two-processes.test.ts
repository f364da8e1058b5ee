// IM channels across two gateway processes on one PostgreSQL, one Redis and a shared DEER_FLOW_HOME: a webhook
// event delivered to both processes (5 times) runs once, and the Telegram long poll is held by one process at a
// time, taken over by the other when its holder is killed.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Session } from "../support/auth-client.js";
import { startTelegramFake, type TelegramFake } from "../support/fakes/telegram.js";
import { freePort, startGateway, type GatewayProcess } from "../support/gateway-process.js";
import { createTestDatabase, sharedSections, testPrefix } from "../support/services.js";
import { until } from "../support/wait.js";

const SECRET = "scale-secret";
let db: Awaited<ReturnType<typeof createTestDatabase>>;
let dir: string;
let webhookTg: TelegramFake;
let pollTg: TelegramFake;
let a: GatewayProcess;
let b: GatewayProcess;

function configYaml(tg: TelegramFake, mode: "webhook" | "polling", shared: string): string {
  return `models:\n  - name: s\n    use: deerflow-gateway:ScriptedChatModel\n    model: s\nchannels:\n  telegram:\n    enabled: true\n    bot_token: "${tg.token}"\n    api_base: ${tg.url}\n    mode: ${mode}\n    webhook_secret: ${SECRET}\n    polling_timeout: 0\n    stream_edit_interval_ms: 30\nchannel_connections:\n  enabled: true\n  telegram:\n    enabled: true\n${shared}`;
}

beforeAll(async () => {
  db = await createTestDatabase();
  dir = mkdtempSync(path.join(tmpdir(), "dfgw-scale-channels-"));
  webhookTg = await startTelegramFake("1:WEBHOOK");
  pollTg = await startTelegramFake("2:POLL");
  const shared = sharedSections(db.url, testPrefix());
  writeFileSync(path.join(dir, "webhook.yaml"), configYaml(webhookTg, "webhook", shared));
  writeFileSync(path.join(dir, "poll.yaml"), configYaml(pollTg, "polling", shared));
  const env = (config: string) => ({ DEER_FLOW_CONFIG_PATH: path.join(dir, config), DEER_FLOW_HOME: path.join(dir, "home"), DEER_FLOW_AGENTS_DIR: path.join(dir, "agents"), DEER_FLOW_AUTH_DISABLED: "1", AUTH_JWT_SECRET: "" });
  // One after the other: two cold starts at once outrun the 30 s start bound on a loaded machine.
  a = await startGateway(await freePort(), env("webhook.yaml"));
  b = await startGateway(await freePort(), env("webhook.yaml"));
}, 120_000);
afterAll(async () => {
  await Promise.all([a?.stop("SIGKILL"), b?.stop("SIGKILL")]);
  await webhookTg?.close();
  await pollTg?.close();
  await db?.drop();
  rmSync(dir, { recursive: true, force: true });
});

describe("channels across two processes", () => {
  it("runs an event delivered 5 times to two processes once", async () => {
    const update = webhookTg.dm(901, "once across processes");
    const deliveries = Array.from({ length: 5 }, (_, i) => fetch(`${(i % 2 ? b : a).url}/api/channels/webhooks/telegram`, {
      method: "POST", headers: { "content-type": "application/json", "x-telegram-bot-api-secret-token": SECRET }, body: JSON.stringify(update),
    }));
    expect((await Promise.all(deliveries)).map((r) => r.status)).toEqual([200, 200, 200, 200, 200]);
    await until(() => webhookTg.sent.some((s) => s.texts.at(-1) === "You said: once across processes"), 15_000);
    const threads = await (await new Session(a.url).fetch("/threads/search", { json: {} })).json();
    expect(threads).toHaveLength(1);
    const runs = await (await fetch(`${a.url}/threads/${threads[0].thread_id}/runs`)).json();
    expect(runs).toHaveLength(1);
    expect(webhookTg.sent.filter((s) => s.chat_id === "901")).toHaveLength(1);
  });

  it("holds the long poll in one process, and the other takes it over when the holder dies", async () => {
    const env = (config: string) => ({ DEER_FLOW_CONFIG_PATH: path.join(dir, config), DEER_FLOW_HOME: path.join(dir, "home"), DEER_FLOW_AGENTS_DIR: path.join(dir, "agents"), DEER_FLOW_AUTH_DISABLED: "1", AUTH_JWT_SECRET: "" });
    let r: GatewayProcess | undefined;
    const p = await startGateway(await freePort(), env("poll.yaml"));
    const q = await startGateway(await freePort(), env("poll.yaml"));
    try {
      await until(() => pollTg.calls.some((c) => c.method === "getUpdates"), 10_000);
      pollTg.pushUpdate(pollTg.dm(902, "polled once").message as Record<string, unknown>);
      await until(() => pollTg.sent.some((s) => s.texts.at(-1) === "You said: polled once"), 15_000);
      expect(pollTg.sent.filter((s) => s.chat_id === "902")).toHaveLength(1);
      // Kill P, then (with a fresh R beside Q) kill Q: one of the two was the lease holder when it died, and
      // the survivor takes the lease once it expires (polling_timeout + 5 s); each message is still answered once.
      await p.stop("SIGKILL");
      pollTg.pushUpdate(pollTg.dm(903, "after P died").message as Record<string, unknown>);
      await until(() => pollTg.sent.some((s) => s.texts.at(-1) === "You said: after P died"), 30_000);
      r = await startGateway(await freePort(), env("poll.yaml"));
      await q.stop("SIGKILL");
      pollTg.pushUpdate(pollTg.dm(904, "after Q died").message as Record<string, unknown>);
      await until(() => pollTg.sent.some((s) => s.texts.at(-1) === "You said: after Q died"), 30_000);
      for (const chat of ["902", "903", "904"]) expect(pollTg.sent.filter((s) => s.chat_id === chat)).toHaveLength(1);
    } finally {
      await Promise.all([p.stop("SIGKILL"), q.stop("SIGKILL"), r?.stop("SIGKILL")]);
    }
  }, 150_000);
});
