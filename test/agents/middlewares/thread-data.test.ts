import { AIMessage, HumanMessage } from "@langchain/core/messages";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ThreadDataMiddleware } from "../../../src/agents/middlewares/thread-data.js";
import { threadDirsOf } from "../../../src/sandbox/thread-dirs.js";
import { threadDataPaths } from "../../../src/config/paths.js";

let base: string;
beforeEach(() => {
  base = mkdtempSync(path.join(tmpdir(), "threads-"));
});
afterEach(() => rmSync(base, { recursive: true, force: true }));

type Update = { thread_data: Record<string, string>; messages?: HumanMessage[] };

describe("ThreadDataMiddleware run-start update (agent-factory.md §6.1, AF-052)", () => {
  it("records the thread's virtual directories (never host paths) without creating them when lazy", () => {
    const mw = new ThreadDataMiddleware({ baseDir: base, lazyInit: true });
    const update = mw.runStartUpdate({ messages: [] }, { context: { thread_id: "thread-123", user_id: "runtime-user" } }) as Update;
    const root = path.join(base, "users", "runtime-user", "threads", "thread-123", "user-data");
    expect(update.thread_data).toEqual({
      workspace_path: "/mnt/user-data/workspace",
      uploads_path: "/mnt/user-data/uploads",
      outputs_path: "/mnt/user-data/outputs",
    });
    expect(existsSync(root)).toBe(false);
  });

  it("creates the host directories when lazyInit is false", () => {
    new ThreadDataMiddleware({ baseDir: base, lazyInit: false }).runStartUpdate({ messages: [] }, { context: { thread_id: "t1" } });
    for (const p of Object.values(threadDataPaths(base, "default", "t1"))) expect(existsSync(p)).toBe(true);
  });

  it("recomputes host directories from the run's ids, falling back to configurable.thread_id and user_id", () => {
    expect(threadDirsOf({ context: {}, configurable: { thread_id: "cfg-thread", user_id: "u2" } }, base)?.outputs_path).toBe(path.join(base, "users", "u2", "threads", "cfg-thread", "user-data", "outputs"));
    expect(threadDirsOf({ context: { thread_id: "../x" } }, base)).toBeNull();
    expect(threadDirsOf({ context: {} }, base)).toBeNull();
  });

  it("fails clearly when no thread id is available anywhere", () => {
    const mw = new ThreadDataMiddleware({ baseDir: base });
    expect(() => mw.runStartUpdate({ messages: [] }, { context: {}, configurable: {} })).toThrow("Thread ID is required in runtime context or config.configurable");
    expect(() => mw.runStartUpdate({ messages: [] }, {})).toThrow("Thread ID is required");
  });

  it("rejects an unsafe thread id", () => {
    expect(() => new ThreadDataMiddleware({ baseDir: base }).runStartUpdate({ messages: [] }, { context: { thread_id: "../escape" } })).toThrow("Invalid thread id");
  });

  it("stamps the newest human message: same id and content, name user-input, run_id and a UTC ISO timestamp", () => {
    const human = new HumanMessage({ id: "h1", content: "hello", additional_kwargs: { files: [] } });
    const update = new ThreadDataMiddleware({ baseDir: base }).runStartUpdate({ messages: [human] }, { context: { thread_id: "t", run_id: "run-9" } }) as Update;
    const stamped = update.messages![0];
    expect(stamped.id).toBe("h1");
    expect(stamped.content).toBe("hello");
    expect(stamped.name).toBe("user-input");
    expect(stamped.additional_kwargs.run_id).toBe("run-9");
    expect(stamped.additional_kwargs.files).toEqual([]);
    expect(String(stamped.additional_kwargs.timestamp)).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
  });

  it("keeps an existing name and does not touch a last message that is not human", () => {
    const mw = new ThreadDataMiddleware({ baseDir: base });
    const named = mw.runStartUpdate({ messages: [new HumanMessage({ id: "h", content: "x", name: "alice" })] }, { context: { thread_id: "t" } }) as Update;
    expect(named.messages![0].name).toBe("alice");
    const afterAi = mw.runStartUpdate({ messages: [new HumanMessage("x"), new AIMessage("y")] }, { context: { thread_id: "t" } }) as Update;
    expect(afterAi).not.toHaveProperty("messages");
  });
});

describe("threadDataPaths", () => {
  it("validates both ids as safe path segments", () => {
    expect(() => threadDataPaths(base, "a/b", "t")).toThrow("Invalid user id");
    expect(() => threadDataPaths(base, "u", "")).toThrow("Invalid thread id");
    expect(() => threadDataPaths(base, "u", "x".repeat(129))).toThrow("Invalid thread id");
  });
});
