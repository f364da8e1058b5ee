// `dedupe_storage.backend` on one process without PostgreSQL (upstream dedupe_store.build_inbound_dedupe_store):
// `postgres` with a SQLite database starts, warns that it needs database.backend: postgres, and keeps event ids in
// the channel database (upstream falls back to memory); a redelivered Telegram update still runs once.
import { existsSync } from "node:fs";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { captureLogs } from "../support/capture-logs.js";
import { startTelegramFake, type TelegramFake } from "../support/fakes/telegram.js";
import { startHarness, type Harness } from "../support/harness.js";
import { until } from "../support/wait.js";

const SECRET = "dedupe-secret";
let h: Harness | undefined;
let tg: TelegramFake | undefined;
let logs: ReturnType<typeof captureLogs> | undefined;
afterEach(async () => {
  await h?.close();
  await tg?.close();
  logs?.restore();
  h = tg = logs = undefined;
});

describe("dedupe_storage.backend: postgres without a PostgreSQL database", () => {
  it("warns, keeps event ids in channels.sqlite, and runs a redelivered update once", async () => {
    logs = captureLogs();
    tg = await startTelegramFake();
    h = await startHarness(`models:
  - name: s
    use: deerflow-gateway:ScriptedChatModel
    model: s
channels:
  telegram:
    enabled: true
    bot_token: "${tg.token}"
    api_base: ${tg.url}
    mode: webhook
    webhook_secret: ${SECRET}
    stream_edit_interval_ms: 30
dedupe_storage:
  backend: postgres
`);
    expect(logs.messages().some((m) => m.startsWith("dedupe_storage.backend postgres needs database.backend: postgres"))).toBe(true);
    expect(existsSync(path.join(process.env.DEER_FLOW_HOME!, "data", "channels.sqlite"))).toBe(true);
    const update = tg.dm(801, "only once");
    const deliver = () => fetch(`${h!.url}/api/channels/webhooks/telegram`, { method: "POST", headers: { "content-type": "application/json", "x-telegram-bot-api-secret-token": SECRET }, body: JSON.stringify(update) });
    expect((await Promise.all([deliver(), deliver(), deliver()])).map((r) => r.status)).toEqual([200, 200, 200]);
    await until(() => tg!.sent.some((s) => s.texts.at(-1) === "You said: only once"));
    const threads = await (await fetch(`${h.url}/threads/search`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" })).json();
    expect(threads).toHaveLength(1);
    await until(async () => (await (await fetch(`${h!.url}/threads/${threads[0].thread_id}/runs`)).json()).every((r: { status: string }) => r.status === "success"));
    expect(await (await fetch(`${h.url}/threads/${threads[0].thread_id}/runs`)).json()).toHaveLength(1);
    expect(tg.sent.filter((s) => s.chat_id === "801")).toHaveLength(1);
  });
});
