// One Slack Socket Mode session per app across gateway processes (issue 48, item 4): the session is held under the
// `slack-socket:*` lease. In one process with two adapters on one channel store: one opens the session, the other
// waits and takes over when the holder stops. With two real gateway processes sharing DEER_FLOW_HOME: one holds
// the session, an event is answered once, and after the holder is killed the other takes the lease once it expires.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import pino from "pino";
import { afterEach, describe, expect, it } from "vitest";
import { SlackSection } from "../../src/channels/config.js";
import { SlackAdapter } from "../../src/channels/slack.js";
import { SqliteChannelStore } from "../../src/channels/store.js";
import type { InboundMessage } from "../../src/channels/types.js";
import { openSqlite } from "../../src/runtime/persistence/sqlite/sqlite.js";
import { socketDm, startSlackFake, type SlackFake } from "../support/fakes/slack.js";
import { freePort, startGateway, type GatewayProcess } from "../support/gateway-process.js";
import { until } from "../support/wait.js";

let slack: SlackFake | undefined;
const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
  await slack?.close();
  slack = undefined;
});

describe("Slack Socket Mode across processes", () => {
  it("two adapters on one store: one session; the other takes it over when the holder stops", async () => {
    const fake = (slack = await startSlackFake());
    const dir = mkdtempSync(path.join(tmpdir(), "dfgw-slack-lease-"));
    const store = new SqliteChannelStore(openSqlite(path.join(dir, "channels.sqlite")));
    cleanups.push(() => { store.close(); rmSync(dir, { recursive: true, force: true }); });
    const section = SlackSection.parse({ enabled: true, bot_token: fake.token, app_token: fake.appToken, api_base: fake.url });
    const got: Record<string, InboundMessage[]> = { a: [], b: [] };
    const make = (holderId: "a" | "b") => new SlackAdapter(section, { logger: pino({ level: "silent" }), lease: store, holderId, leaseMs: 600 });
    const [a, b] = [make("a"), make("b")];
    await a.start(async (m) => void got.a.push(m));
    await b.start(async (m) => void got.b.push(m));
    cleanups.push(() => a.stop(), () => b.stop());
    await until(() => fake.openSockets() === 1, 10_000);
    // Three pongs (a second apart) outlast the 600 ms lease several times: the other adapter kept trying all along.
    await until(() => fake.pongs >= 3, 10_000);
    expect(fake.socketOpens).toBe(1);
    fake.pushEvent(socketDm("Ev-1", "U1", "first"));
    await until(() => got.a.length + got.b.length === 1);
    const [holder, other] = got.a.length ? [a, b] : [b, a];
    const otherGot = got.a.length ? got.b : got.a;
    await holder.stop();
    await until(() => fake.socketOpens === 2 && fake.openSockets() === 1, 10_000);
    fake.pushEvent(socketDm("Ev-2", "U1", "second"));
    await until(() => otherGot.length === 1);
    expect(otherGot[0]).toMatchObject({ provider: "slack", eventId: "Ev-2", text: "second", userId: "U1", workspaceId: "T1", isDirect: true });
    expect(other.receiving).toBe(true);
  });

  it("two gateway processes: one holds the session, an event is answered once, the other takes over after the holder is killed", async () => {
    const fake = (slack = await startSlackFake());
    const dir = mkdtempSync(path.join(tmpdir(), "dfgw-slack-2p-"));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    writeFileSync(path.join(dir, "config.yaml"), [
      "models:", "  - name: s", "    use: deerflow-gateway:ScriptedChatModel", "    model: s",
      "channels:", "  slack:", "    enabled: true", `    bot_token: ${fake.token}`, `    app_token: ${fake.appToken}`, `    api_base: ${fake.url}`, "    stream_edit_interval_ms: 30", "",
    ].join("\n"));
    const env = { DEER_FLOW_CONFIG_PATH: path.join(dir, "config.yaml"), DEER_FLOW_HOME: path.join(dir, "home"), DEER_FLOW_AGENTS_DIR: path.join(dir, "agents"), DEER_FLOW_AUTH_DISABLED: "1", AUTH_JWT_SECRET: "" };
    const p: GatewayProcess = await startGateway(await freePort(), env);
    cleanups.push(() => p.stop("SIGKILL"));
    await until(() => fake.openSockets() === 1, 30_000);
    const q: GatewayProcess = await startGateway(await freePort(), env);
    cleanups.push(() => q.stop("SIGTERM"));
    fake.pushEvent(socketDm("Ev-p", "U1", "held by one"));
    await until(() => fake.sent.some((s) => s.texts.at(-1) === "You said: held by one"), 20_000);
    expect(fake.socketOpens).toBe(1);
    // SIGKILL: no release; Q takes the lease once it expires (30 s) and opens the session.
    await p.stop("SIGKILL");
    await until(() => fake.socketOpens === 2 && fake.openSockets() === 1, 60_000);
    fake.pushEvent(socketDm("Ev-q", "U1", "after the holder died"));
    await until(() => fake.sent.some((s) => s.texts.at(-1) === "You said: after the holder died"), 20_000);
    expect(fake.sent.filter((s) => s.texts.some((t) => t.startsWith("You said:")))).toHaveLength(2);
    expect(fake.socketOpens).toBe(2);
  }, 240_000);
});
