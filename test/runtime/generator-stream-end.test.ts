import { RunnableLambda } from "@langchain/core/runnables";
import { IterableReadableStream } from "@langchain/core/utils/stream";
import { Annotation, MemorySaver, StateGraph } from "@langchain/langgraph";
import { afterAll, describe, expect, it } from "vitest";
import { installGeneratorStreamEnd, uninstallGeneratorStreamEnd } from "../../src/runtime/generator-stream-end.js";

/** Counts the enqueues that throw (what the unpatched stream does once at its end), across every ReadableStream. */
function countFailedEnqueues(): { failed: () => number; restore: () => void } {
  let controllerProto: { enqueue(chunk?: unknown): void } | undefined;
  new ReadableStream({
    start(controller) {
      controllerProto = Object.getPrototypeOf(controller) as { enqueue(chunk?: unknown): void };
    },
  });
  const proto = controllerProto!;
  const original = proto.enqueue;
  let failed = 0;
  proto.enqueue = function enqueue(this: unknown, chunk?: unknown) {
    try {
      return original.call(this, chunk);
    } catch (err) {
      failed++;
      throw err;
    }
  };
  return { failed: () => failed, restore: () => void (proto.enqueue = original) };
}

/** A graph of two nodes, streamed with `values` + `updates`, as the worker streams the lead agent. */
async function streamGraph(threadId: string, failAt?: string): Promise<unknown[]> {
  const State = Annotation.Root({ log: Annotation<string[]>({ reducer: (a, b) => [...a, ...b], default: () => [] }) });
  const node = (name: string) => async () => {
    if (name === failAt) throw new Error(`${name} failed`);
    return { log: [name] };
  };
  const graph = new StateGraph(State).addNode("a", node("a")).addNode("b", node("b")).addEdge("__start__", "a").addEdge("a", "b").addEdge("b", "__end__").compile({ checkpointer: new MemorySaver() });
  const chunks: unknown[] = [];
  try {
    for await (const chunk of await graph.stream({ log: ["in"] }, { configurable: { thread_id: threadId }, streamMode: ["values", "updates"] })) chunks.push(chunk);
  } catch (err) {
    chunks.push({ error: (err as Error).message });
  }
  return chunks;
}

/** A runnable whose own stream yields three parts. */
const counting = RunnableLambda.from(async function* (n: number) {
  for (let i = 0; i < n; i++) yield i;
});

async function drain<T>(iterable: AsyncIterable<T>, stopAfter = Infinity): Promise<T[]> {
  const out: T[] = [];
  for await (const value of iterable) {
    out.push(value);
    if (out.length >= stopAfter) break;
  }
  return out;
}

describe("installGeneratorStreamEnd", () => {
  afterAll(() => installGeneratorStreamEnd());

  it("streams what @langchain/core's own method streams, without the failing enqueue at the end", async () => {
    uninstallGeneratorStreamEnd();
    const counter = countFailedEnqueues();
    try {
      const expected = { graph: await streamGraph("t1"), failing: await streamGraph("t2", "b"), runnable: await drain(await counting.stream(3)) };
      const failedBefore = counter.failed();
      // The unpatched method throws once per finished stream (here: two graph streams and a runnable's stream).
      expect(failedBefore).toBeGreaterThanOrEqual(2);
      expect(installGeneratorStreamEnd()).toBe(true);
      const actual = { graph: await streamGraph("t1"), failing: await streamGraph("t2", "b"), runnable: await drain(await counting.stream(3)) };
      expect(actual).toEqual(expected);
      expect(actual.failing.at(-1)).toEqual({ error: "b failed" });
      expect(actual.runnable).toEqual([0, 1, 2]);
      expect(counter.failed()).toBe(failedBefore);
    } finally {
      counter.restore();
    }
  });

  it("still ends the generator when the reader stops early, and passes the generator's error on", async () => {
    expect(installGeneratorStreamEnd()).toBe(true);
    let finished = false;
    async function* endless() {
      try {
        for (let i = 0; ; i++) yield i;
      } finally {
        finished = true;
      }
    }
    expect(await drain(IterableReadableStream.fromAsyncGenerator(endless()), 2)).toEqual([0, 1]);
    expect(finished).toBe(true);
    async function* broken() {
      yield "first";
      throw new Error("generator broke");
    }
    const stream = IterableReadableStream.fromAsyncGenerator(broken());
    expect(await stream.next()).toEqual({ done: false, value: "first" });
    await expect(stream.next()).rejects.toThrow("generator broke");
  });

  it("is idempotent and can be taken out again", () => {
    expect(installGeneratorStreamEnd()).toBe(true);
    const patched = IterableReadableStream.fromAsyncGenerator;
    expect(installGeneratorStreamEnd()).toBe(true);
    expect(IterableReadableStream.fromAsyncGenerator).toBe(patched);
    uninstallGeneratorStreamEnd();
    expect(IterableReadableStream.fromAsyncGenerator).not.toBe(patched);
    expect(installGeneratorStreamEnd()).toBe(true);
  });
});
