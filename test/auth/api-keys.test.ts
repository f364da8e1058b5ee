import { Client } from "@langchain/langgraph-sdk";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startHarness, type Harness } from "../support/harness.js";
import { Session, signUp } from "../support/auth-client.js";

const CONFIG = "models:\n  - name: s\n    use: deerflow-gateway:ScriptedChatModel\n    model: s\n";
const PASSWORD = "correct-horse-battery";
let h: Harness;
let alice: Session;
let bob: Session;
beforeAll(async () => {
  h = await startHarness(CONFIG, { authDisabled: false });
  alice = await signUp(h.url, "alice@example.com", PASSWORD, "initialize");
  bob = await signUp(h.url, "bob@example.com", PASSWORD);
});
afterAll(async () => h.close());

const createKey = async (session: Session, name: string) => {
  const res = await session.fetch("/api/v1/auth/api-keys", { json: { name } });
  expect(res.status).toBe(201);
  return (await res.json()) as { id: string; name: string; prefix: string; key: string; created_at: string; last_used_at: null };
};

describe("API keys", () => {
  it("shows the secret once; lists prefix, name, created and last used, never the secret or its hash", async () => {
    const created = await createKey(alice, "laptop");
    expect(created.key).toMatch(/^dfk_[A-Za-z0-9_-]{43}$/);
    expect(created.prefix).toBe(created.key.slice(0, 12));
    expect(created).toMatchObject({ name: "laptop", last_used_at: null });
    expect((await fetch(`${h.url}/api/models`, { headers: { "x-api-key": created.key } })).status).toBe(200);
    const listRes = await alice.fetch("/api/v1/auth/api-keys");
    const text = await listRes.text();
    expect(text).not.toContain(created.key);
    const listed = JSON.parse(text).api_keys.find((k: { id: string }) => k.id === created.id);
    expect(Object.keys(listed).sort()).toEqual(["created_at", "id", "last_used_at", "name", "prefix"]);
    expect(listed.last_used_at).not.toBeNull();
    // Another user's listing does not show it.
    expect((await (await bob.fetch("/api/v1/auth/api-keys")).json()).api_keys).toEqual([]);
  });

  it("is accepted as x-api-key and as Authorization: Bearer, acting as its owner (no CSRF needed)", async () => {
    const { key } = await createKey(alice, "script");
    const me = await (await fetch(`${h.url}/api/v1/auth/me`, { headers: { authorization: `Bearer ${key}` } })).json();
    expect(me.email).toBe("alice@example.com");
    const created = await fetch(`${h.url}/threads`, { method: "POST", headers: { "x-api-key": key, "content-type": "application/json" }, body: "{}" });
    expect(created.status).toBe(200);
    const { thread_id } = await created.json();
    expect((await alice.fetch(`/threads/${thread_id}`)).status).toBe(200);
    expect((await bob.fetch(`/threads/${thread_id}`)).status).toBe(404);
  });

  it("refuses unknown and malformed keys with 401, even when a valid cookie is also sent", async () => {
    for (const headers of [{ "x-api-key": "dfk_not-a-real-key" }, { authorization: "Bearer nonsense" }] as Record<string, string>[]) {
      const res = await fetch(`${h.url}/api/models`, { headers });
      expect(res.status).toBe(401);
      expect((await res.json()).detail).toEqual({ code: "token_invalid", message: "Invalid API key" });
    }
    expect((await alice.fetch("/api/models", { headers: { "x-api-key": "dfk_wrong" } })).status).toBe(401);
  });

  it("a revoked key stops working at once; only its owner can revoke it", async () => {
    const { id, key } = await createKey(alice, "temp");
    const use = () => fetch(`${h.url}/threads/search`, { method: "POST", headers: { "x-api-key": key, "content-type": "application/json" }, body: "{}" });
    expect((await use()).status).toBe(200);
    expect((await use()).status).toBe(200);
    expect((await bob.fetch(`/api/v1/auth/api-keys/${id}`, { method: "DELETE" })).status).toBe(404);
    expect((await use()).status).toBe(200);
    expect((await alice.fetch(`/api/v1/auth/api-keys/${id}`, { method: "DELETE" })).status).toBe(204);
    expect((await use()).status).toBe(401);
    expect((await alice.fetch(`/api/v1/auth/api-keys/${id}`, { method: "DELETE" })).status).toBe(404);
    expect((await (await alice.fetch("/api/v1/auth/api-keys")).json()).api_keys.some((k: { id: string }) => k.id === id)).toBe(false);
  });

  it("needs a name (422) and a signed-in caller (401)", async () => {
    expect((await alice.fetch("/api/v1/auth/api-keys", { json: { name: "" } })).status).toBe(422);
    expect((await fetch(`${h.url}/api/v1/auth/api-keys`)).status).toBe(401);
    expect((await fetch(`${h.url}/api/v1/auth/api-keys`, { method: "POST", headers: { "content-type": "application/json" }, body: '{"name":"x"}' })).status).toBe(401);
  });
});

describe("the official LangGraph SDK Client with apiKey", () => {
  it("creates a thread, streams a run, reads state and searches as the key's owner; without a key it is refused", async () => {
    const { key } = await createKey(bob, "sdk");
    const client = new Client({ apiUrl: h.url, apiKey: key, callerOptions: { maxRetries: 0 } });
    const thread = await client.threads.create({ metadata: { via: "sdk" } });
    const events: string[] = [];
    for await (const part of client.runs.stream(thread.thread_id, "lead_agent", { input: { messages: [{ type: "human", content: "hello sdk" }] }, streamMode: "values" })) events.push(part.event);
    expect(events).toContain("values");
    const state = await client.threads.getState(thread.thread_id);
    const messages = (state.values as { messages: { content: string }[] }).messages;
    expect(messages.at(-1)!.content).toBe("You said: hello sdk");
    expect((await client.threads.search({ metadata: { via: "sdk" } })).map((t) => t.thread_id)).toEqual([thread.thread_id]);
    expect((await client.runs.list(thread.thread_id)).length).toBe(1);

    const alicesClient = new Client({ apiUrl: h.url, apiKey: (await createKey(alice, "sdk")).key, callerOptions: { maxRetries: 0 } });
    await expect(alicesClient.threads.get(thread.thread_id)).rejects.toMatchObject({ status: 404 });
    expect(await alicesClient.threads.search({ metadata: { via: "sdk" } })).toEqual([]);

    const anonymous = new Client({ apiUrl: h.url, apiKey: null, callerOptions: { maxRetries: 0 } });
    await expect(anonymous.threads.search()).rejects.toMatchObject({ status: 401 });
  });
});
