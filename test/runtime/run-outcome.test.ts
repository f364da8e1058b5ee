// How a run's outcome is recorded: the run row and the thread's release, also when the store refuses one of them.
import path from "node:path";
import Database from "better-sqlite3";
import { afterEach, describe, expect, it } from "vitest";
import { postJson, startHarness, type Harness } from "../support/harness.js";

const CONFIG = "models:\n  - name: s\n    use: deerflow-gateway:ScriptedChatModel\n    model: s\n";

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

/** A second connection to the gateway's SQLite file (as an operator's `sqlite3` shell would open it). */
function openGatewayDb(harness: Harness): Database.Database {
  return new Database(path.join(harness.dir, ".deer-flow", "data", "deerflow.sqlite"));
}

describe("recording a run's outcome", () => {
  it("stores the run as success and the thread as idle once the stream has ended", async () => {
    h = await startHarness(CONFIG);
    const thread = await (await postJson(`${h.url}/threads`, {})).json();
    const response = await postJson(`${h.url}/threads/${thread.thread_id}/runs/stream`, { assistant_id: "lead_agent", input: { messages: [{ role: "user", content: "hello" }] }, stream_mode: ["values"] });
    const text = await response.text();
    expect(text).toContain("event: end");
    const runId = /\/runs\/([0-9a-f-]+)/.exec(response.headers.get("content-location") ?? "")?.[1];
    // Right after the end frame, without waiting: both writes were committed before it was sent.
    const db = openGatewayDb(h);
    try {
      expect(db.prepare("SELECT status FROM runs WHERE run_id = ?").get(runId)).toEqual({ status: "success" });
      expect(db.prepare("SELECT status FROM threads WHERE thread_id = ?").get(thread.thread_id)).toEqual({ status: "idle" });
    } finally {
      db.close();
    }
  });

  it("still releases the thread when the store refuses the run's final status", async () => {
    h = await startHarness(CONFIG);
    const db = openGatewayDb(h);
    try {
      db.exec("CREATE TRIGGER refuse_success BEFORE INSERT ON runs WHEN NEW.status = 'success' BEGIN SELECT RAISE(ABORT, 'disk says no'); END");
      const thread = await (await postJson(`${h.url}/threads`, {})).json();
      const waited = await postJson(`${h.url}/threads/${thread.thread_id}/runs/wait`, { assistant_id: "lead_agent", input: { messages: [{ role: "user", content: "hello" }] } });
      expect(waited.status).toBe(200);
      // The answer is stored (the checkpoints are not refused), and the thread is free for the next run.
      expect(JSON.stringify(await waited.json())).toContain("You said: hello");
      expect(db.prepare("SELECT status FROM threads WHERE thread_id = ?").get(thread.thread_id)).toEqual({ status: "idle" });
      const threadRead = await (await fetch(`${h.url}/threads/${thread.thread_id}`)).json();
      expect(threadRead.status).toBe("idle");
      db.exec("DROP TRIGGER refuse_success");
      const next = await postJson(`${h.url}/threads/${thread.thread_id}/runs/wait`, { assistant_id: "lead_agent", input: { messages: [{ role: "user", content: "again" }] } });
      expect(next.status).toBe(200);
      expect(JSON.stringify(await next.json())).toContain("You said: again");
    } finally {
      db.close();
    }
  });
});
