// The ChannelStore contract, one suite run on both backends: SQLite (channels.sqlite, two connections to one file,
// as two processes of one host) and PostgreSQL (two stores with their own pools on one database, as two hosts).
// Concurrency cases race the two instances: a connect code is spent once, an event id is recorded once, a lease
// has one holder, the connect-code cap holds.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openPgChannelStore, type PgChannelStore } from "../../src/channels/pg-store.js";
import { SqliteChannelStore, type ChannelStore } from "../../src/channels/store.js";
import { openSqlite } from "../../src/runtime/persistence/sqlite/sqlite.js";
import { createTestDatabase } from "../support/services.js";

interface Backend {
  name: string;
  /** Opens one more store on the same backing database (another "process"). */
  open(): Promise<ChannelStore>;
  cleanup(): Promise<void>;
}

function sqliteBackend(): Backend {
  const dir = mkdtempSync(path.join(tmpdir(), "dfgw-chstore-"));
  return {
    name: "sqlite",
    open: async () => new SqliteChannelStore(openSqlite(path.join(dir, "channels.sqlite"))),
    cleanup: async () => rmSync(dir, { recursive: true, force: true }),
  };
}

async function postgresBackend(): Promise<Backend & { url: string }> {
  const db = await createTestDatabase();
  return { name: "postgres", url: db.url, open: () => openPgChannelStore(db.url), cleanup: () => db.drop() };
}

const identity = (id: string, workspaceId: string | null = null) => ({ externalAccountId: id, name: `user ${id}`, workspaceId });
const MIN = 60_000;

describe.each([
  ["sqlite", async () => sqliteBackend()],
  ["postgres", postgresBackend],
] as const)("ChannelStore contract on %s", (_name, makeBackend) => {
  let backend: Backend;
  let one: ChannelStore;
  let two: ChannelStore;
  let n = 0;
  /** Names no other case in this file uses (the backing database is shared by the file's cases). */
  const unique = (s: string) => `${s}-${++n}-${Math.random().toString(36).slice(2, 8)}`;

  beforeAll(async () => {
    backend = await makeBackend();
    one = await backend.open();
    two = await backend.open();
  });
  afterAll(async () => {
    await one?.close();
    await two?.close();
    await backend?.cleanup();
  });

  /** Binds a fresh identity of `provider` to `owner` through a code; returns the connection. */
  async function bind(owner: string, provider = "telegram", id = unique("tg")) {
    const code = unique("code");
    expect(await one.createConnectCode(owner, provider, code, 10 * MIN, 5)).toBe(true);
    const connection = await two.redeemConnectCode(provider, code, identity(id));
    expect(connection).not.toBeNull();
    return connection!;
  }

  it("a connect code binds an identity once, for its provider only, and not after it expires", async () => {
    const owner = unique("alice");
    const code = unique("code");
    await one.createConnectCode(owner, "telegram", code, 10 * MIN, 5);
    expect(await two.redeemConnectCode("slack", code, identity("7"))).toBeNull();
    const tgId = unique("tg");
    const bound = await two.redeemConnectCode("telegram", code, identity(tgId));
    expect(bound).toMatchObject({ owner_user_id: owner, provider: "telegram", status: "connected", external_account_id: tgId, external_account_name: `user ${tgId}`, workspace_id: null, metadata: {} });
    expect(await one.redeemConnectCode("telegram", code, identity(unique("tg")))).toBeNull();
    expect(await one.findByIdentity("telegram", tgId, null)).toEqual(bound);
    expect((await one.listConnections(owner)).map((c) => c.id)).toEqual([bound!.id]);
    const expired = unique("code");
    await one.createConnectCode(owner, "telegram", expired, 0, 5);
    expect(await two.redeemConnectCode("telegram", expired, identity(unique("tg")))).toBeNull();
  });

  it("a code redeemed by both instances at once binds once", async () => {
    const owner = unique("owner");
    const code = unique("code");
    await one.createConnectCode(owner, "slack", code, 10 * MIN, 5);
    const results = await Promise.all([one, two, one, two].map((s, i) => s.redeemConnectCode("slack", code, identity(`U${i}`, "T1"))));
    expect(results.filter((r) => r !== null)).toHaveLength(1);
    expect(await one.listConnections(owner)).toHaveLength(1);
  });

  it("caps pending codes per owner and provider, across instances", async () => {
    const owner = unique("capped");
    const made = await Promise.all(Array.from({ length: 8 }, (_, i) => (i % 2 ? one : two).createConnectCode(owner, "discord", unique("code"), 10 * MIN, 5)));
    expect(made.filter(Boolean)).toHaveLength(5);
    expect(await one.createConnectCode(owner, "telegram", unique("code"), 10 * MIN, 5)).toBe(true);
  });

  it("rebinding an identity to another owner drops the old owner's conversations", async () => {
    const tgId = unique("tg");
    const first = await bind(unique("alice"), "telegram", tgId);
    await one.setThreadId(first.id, "chat-1", null, "thread-a");
    const code = unique("code");
    const bob = unique("bob");
    await two.createConnectCode(bob, "telegram", code, 10 * MIN, 5);
    const rebound = await one.redeemConnectCode("telegram", code, identity(tgId));
    expect(rebound).toMatchObject({ id: first.id, owner_user_id: bob });
    expect(await two.getThreadId(first.id, "chat-1", null)).toBeNull();
    expect(await two.listConnections(first.owner_user_id)).toEqual([]);
  });

  it("maps conversations and topics to threads, and forgets one on null", async () => {
    const c = await bind(unique("owner"));
    await one.setThreadId(c.id, "chat", null, "t1");
    await one.setThreadId(c.id, "chat", "topic", "t2");
    expect(await two.getThreadId(c.id, "chat", undefined)).toBe("t1");
    expect(await two.getThreadId(c.id, "chat", "topic")).toBe("t2");
    await two.setThreadId(c.id, "chat", null, "t3");
    expect(await one.getThreadId(c.id, "chat", null)).toBe("t3");
    await one.setThreadId(c.id, "chat", null, null);
    expect(await two.getThreadId(c.id, "chat", null)).toBeNull();
    expect(await two.getThreadId(c.id, "chat", "topic")).toBe("t2");
  });

  it("disconnects only the owner's connection and forgets its threads", async () => {
    const owner = unique("owner");
    const c = await bind(owner);
    await one.setThreadId(c.id, "chat", null, "t1");
    expect(await two.disconnect(c.id, unique("intruder"))).toBe(false);
    expect(await two.disconnect(c.id, owner)).toBe(true);
    expect(await one.disconnect(c.id, owner)).toBe(false);
    expect(await one.findByIdentity("telegram", c.external_account_id, null)).toBeNull();
    expect(await one.listConnections(owner)).toEqual([]);
    expect(await one.getThreadId(c.id, "chat", null)).toBeNull();
  });

  it("marks a provider's connections broken and back, and merges runtime settings", async () => {
    const c = await bind(unique("owner"), "feishu");
    await one.setProviderStatus("feishu", "broken");
    expect((await two.findByIdentity("feishu", c.external_account_id, null))?.status).toBe("broken");
    await two.setProviderStatus("feishu", "connected");
    expect((await one.findByIdentity("feishu", c.external_account_id, null))?.status).toBe("connected");
    await one.patchSettings(c.id, { model_name: "m1", agent_name: "a1" });
    await two.patchSettings(c.id, { agent_name: null });
    expect((await one.findByIdentity("feishu", c.external_account_id, null))?.metadata).toEqual({ model_name: "m1" });
  });

  it("records an event id once across instances; a released or expired id is new again", async () => {
    const key = unique("telegram:update");
    const firsts = await Promise.all(Array.from({ length: 10 }, (_, i) => (i % 2 ? one : two).tryRecord(key, 10 * MIN)));
    expect(firsts.filter(Boolean)).toHaveLength(1);
    await two.release(key);
    expect(await one.tryRecord(key, 0)).toBe(true);
    // Recorded with no time to live: it has expired, so the next delivery is handled again.
    expect(await two.tryRecord(key, 10 * MIN)).toBe(true);
    expect(await one.tryRecord(key, 10 * MIN)).toBe(false);
  });

  it("gives a lease to one holder; it is renewed by its holder and taken over once released or expired", async () => {
    const lease = unique("telegram-poll");
    const got = await Promise.all(["h1", "h2", "h3", "h4"].map((h, i) => (i % 2 ? one : two).acquireLease(lease, h, 10 * MIN)));
    expect(got.filter(Boolean)).toHaveLength(1);
    const holder = ["h1", "h2", "h3", "h4"][got.indexOf(true)];
    expect(await one.acquireLease(lease, holder, 10 * MIN)).toBe(true);
    expect(await two.acquireLease(lease, "other", 10 * MIN)).toBe(false);
    await one.releaseLease(lease, "other");
    expect(await two.acquireLease(lease, "other", 10 * MIN)).toBe(false);
    await two.releaseLease(lease, holder);
    expect(await two.acquireLease(lease, "other", 0)).toBe(true);
    // "other" holds it with no time to live: expired, so the next taker gets it.
    expect(await one.acquireLease(lease, holder, 10 * MIN)).toBe(true);
  });

  it("keeps an open clarification until one instance takes it; an expired one is gone", async () => {
    const key = unique("telegram:chat:user");
    await one.setPendingClarification(key, { threadId: "t-old", topicId: null }, 30 * MIN);
    await one.setPendingClarification(key, { threadId: "t1", topicId: "ts-1" }, 30 * MIN);
    const taken = await Promise.all([one.takePendingClarification(key), two.takePendingClarification(key)]);
    expect(taken.filter((t) => t !== null)).toEqual([{ threadId: "t1", topicId: "ts-1" }]);
    await two.setPendingClarification(key, { threadId: "t2", topicId: null }, 0);
    expect(await one.takePendingClarification(key)).toBeNull();
  });
});

describe("PostgreSQL channel store housekeeping", () => {
  let backend: Awaited<ReturnType<typeof postgresBackend>>;
  let store: PgChannelStore;
  beforeAll(async () => {
    backend = await postgresBackend();
    store = await openPgChannelStore(backend.url);
  });
  afterAll(async () => {
    await store?.close();
    await backend?.cleanup();
  });

  it("sweeps expired event ids and keeps live ones", async () => {
    for (let i = 0; i < 5; i++) await store.tryRecord(`gone-${i}`, 0);
    await store.tryRecord("live", 10 * MIN);
    expect(await store.sweepDedupe()).toBe(5);
    const client = new pg.Client({ connectionString: backend.url });
    await client.connect();
    try {
      expect((await client.query("SELECT key FROM channel_dedupe")).rows).toEqual([{ key: "live" }]);
    } finally {
      await client.end();
    }
  });

  it("refuses an unreachable database with a message naming the section", async () => {
    await expect(openPgChannelStore("postgres://nobody@127.0.0.1:1/none")).rejects.toThrow(/^cannot open database\.url for channels: /);
  });
});
