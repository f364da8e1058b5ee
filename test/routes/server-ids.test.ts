import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { postJson, startHarness, type Harness } from "../support/harness.js";
import { parseSse } from "../support/sse.js";

// Ids the server makes up are UUIDv7 (time first), as LangGraph's API server makes run ids: later ids sort after
// earlier ones, and the database indexes keyed by them grow at one end.
const V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
let h: Harness;
beforeAll(async () => {
  h = await startHarness("models:\n  - name: s\n    use: deerflow-gateway:ScriptedChatModel\n    model: s\n");
});
afterAll(async () => h.close());

describe("server-generated ids", () => {
  it("gives new threads and runs time-ordered UUIDv7 ids, and keeps a caller's thread id as given", async () => {
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const res = await postJson(`${h.url}/runs/stream`, { assistant_id: "lead_agent", input: { messages: [{ role: "user", content: `hi ${i}` }] } });
      const meta = parseSse(await res.text()).frames[0].data;
      expect(meta.thread_id).toMatch(V7);
      expect(meta.run_id).toMatch(V7);
      ids.push(meta.run_id);
      await new Promise((r) => setTimeout(r, 2));
    }
    expect([...ids].sort()).toEqual(ids);
    const thread = await (await postJson(`${h.url}/threads`, {})).json();
    expect(thread.thread_id).toMatch(V7);
    const mine = await (await postJson(`${h.url}/threads`, { thread_id: "my-own-thread" })).json();
    expect(mine.thread_id).toBe("my-own-thread");
  });
});
