// The worker's steps in order (runAgent: wait for the turn, build, stream and publish, record the outcome): which
// side effect comes when, on success, on a cancel while pending and on a failed build or stream. Fakes stand in for
// the bridge, the stores and the agent; the checkpointer is LangGraph's MemorySaver.
import { MemorySaver } from "@langchain/langgraph";
import { pino } from "pino";
import { describe, expect, it } from "vitest";
import { parseAppConfig } from "../../../src/config/schema.js";
import type { RunRecord } from "../../../src/runtime/persistence/repositories.js";
import type { ActiveRun } from "../../../src/runtime/runs/run-manager.js";
import { runAgent, type RunJob, type WorkerDeps } from "../../../src/runtime/runs/worker.js";

class ToolBrokeError extends Error {}

/** A run as RunManager.admit hands it over; `predecessors` settles when `release` is called. */
function pendingRun(threadId: string): { run: ActiveRun; release: () => void } {
  let release!: () => void;
  const predecessors = new Promise<void>((resolve) => (release = resolve));
  const record = { run_id: `run-${threadId}`, thread_id: threadId, assistant_id: "lead_agent", metadata: {} } as unknown as RunRecord;
  const run: ActiveRun = { record, controller: new AbortController(), predecessors, done: Promise.resolve(), finished: false, onDisconnect: "cancel" };
  return { run, release };
}

/** Worker services that write every side effect, in order, into `events`; `agent` is what the factory returns. */
function recordingDeps(events: string[], agent: { stream?: () => Promise<AsyncIterable<unknown>>; buildError?: Error }): WorkerDeps {
  const appConfig = parseAppConfig({});
  return {
    bridge: {
      publish: (_runId: string, event: string) => void events.push(`publish:${event}`),
      publishEnd: () => void events.push("end"),
      cleanup: () => void events.push("cleanup"),
    } as unknown as WorkerDeps["bridge"],
    runs: {
      setStatus: async (_runId: string, status: string) => void events.push(`run:${status}`),
      finish: () => void events.push("finish"),
    } as unknown as WorkerDeps["runs"],
    persistence: {
      checkpointer: new MemorySaver(),
      threads: { setStatus: async (_id: string, status: string) => void events.push(`thread:${status}`) },
    } as unknown as WorkerDeps["persistence"],
    agentFactory: async () => {
      events.push("build");
      if (agent.buildError) throw agent.buildError;
      return {
        stream: async () => {
          events.push("stream");
          return agent.stream!();
        },
      };
    },
    getAppConfig: () => appConfig,
    logger: pino({ level: "silent" }),
    cleanupDelayMs: 0,
  };
}

function job(threadId: string): RunJob {
  return {
    input: { messages: [{ role: "user", content: "hi" }] },
    runConfig: { configurable: { thread_id: threadId }, context: { user_id: "u1" }, metadata: {}, recursion_limit: 25 },
    request: { streamModes: ["values"] } as unknown as RunJob["request"],
  };
}

async function* chunks(): AsyncIterable<unknown> {
  yield ["values", { messages: [] }];
}

describe("runAgent, step by step", () => {
  it("takes the thread, publishes metadata, builds, saves running, streams, then records success and releases", async () => {
    const events: string[] = [];
    const { run, release } = pendingRun("t-ok");
    release();
    await runAgent(run, job("t-ok"), recordingDeps(events, { stream: async () => chunks() }));
    expect(events).toEqual(["thread:busy", "publish:metadata", "build", "run:running", "stream", "publish:values", "run:success", "thread:idle", "end", "cleanup", "finish"]);
    expect(run.record.metadata).toMatchObject({ run_id: "run-t-ok", thread_id: "t-ok", assistant_id: "lead_agent" });
  });

  it("builds nothing for a run cancelled while it waits for the runs before it, and still ends it", async () => {
    const events: string[] = [];
    const { run } = pendingRun("t-pending");
    const done = runAgent(run, job("t-pending"), recordingDeps(events, { stream: async () => chunks() }));
    run.controller.abort(new Error("cancelled"));
    await done;
    expect(events).toEqual(["run:interrupted", "thread:idle", "end", "cleanup", "finish"]);
  });

  it("publishes a failed build as an error event and marks the thread error", async () => {
    const events: string[] = [];
    const { run, release } = pendingRun("t-build");
    release();
    await runAgent(run, job("t-build"), recordingDeps(events, { buildError: new Error("no such model") }));
    expect(events).toEqual(["thread:busy", "publish:metadata", "build", "publish:error", "run:error", "thread:error", "end", "cleanup", "finish"]);
  });

  it("names a failed stream by its error class, after the running save", async () => {
    const events: string[] = [];
    const { run, release } = pendingRun("t-stream");
    release();
    await runAgent(run, job("t-stream"), recordingDeps(events, { stream: async () => Promise.reject(new ToolBrokeError("tool broke")) }));
    expect(events).toEqual(["thread:busy", "publish:metadata", "build", "run:running", "stream", "publish:error", "run:error", "thread:error", "end", "cleanup", "finish"]);
    expect(run.errorName).toBe("ToolBrokeError");
  });
});
