// Importing the SDK entry patches nothing: an embedder's process keeps @langchain/core, LangGraph, langchain and
// the platform as they are, and its runs take the libraries' public paths. Checked in a fresh process, since the
// test setup installs the server's patches into this one.
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";

const root = path.resolve(import.meta.dirname, "../..");

const PROBE = `
const { CallbackManager } = await import("@langchain/core/callbacks/manager");
const { AsyncLocalStorageProviderSingleton } = await import("@langchain/core/singletons");
const { Pregel } = await import("@langchain/langgraph/pregel");
const copy = CallbackManager.prototype.copy;
const scope = AsyncLocalStorageProviderSingleton.runWithConfig;
const random = globalThis.crypto.getRandomValues;
const sdk = await import("./src/index.ts");
const { perfPatchesOn } = await import("./src/perf/state.ts");
let streams = 0;
const stream = Pregel.prototype.stream;
Pregel.prototype.stream = function (...args) { streams++; return stream.apply(this, args); };
const agent = sdk.createDeerflowAgent(new sdk.ScriptedChatModel({}), null, { features: { sandbox: false, memory: false, subagent: false } });
const chunks = await sdk.streamAgent(agent, { messages: [{ role: "user", content: "hi" }] }, { context: { thread_id: "t" }, recursionLimit: 25, streamMode: "values" });
let n = 0;
for await (const _ of chunks) n++;
process.stdout.write(JSON.stringify({
  copy: CallbackManager.prototype.copy === copy,
  scope: AsyncLocalStorageProviderSingleton.runWithConfig === scope,
  random: globalThis.crypto.getRandomValues === random && !Object.prototype.hasOwnProperty.call(globalThis.crypto, "getRandomValues"),
  on: perfPatchesOn(),
  streams,
  chunks: n > 0,
}));
`;

describe("the SDK entry (src/index.ts)", () => {
  it("installs no speed patch and streams through the graph's public stream()", async () => {
    const home = mkdtempSync(path.join(tmpdir(), "sdk-entry-"));
    try {
      const { stdout } = await promisify(execFile)(process.execPath, ["--import", "tsx", "--input-type=module", "-e", PROBE], {
        cwd: root,
        env: { ...process.env, DEER_FLOW_HOME: home },
        timeout: 110_000,
      });
      expect(JSON.parse(stdout)).toEqual({ copy: true, scope: true, random: true, on: [], streams: 1, chunks: true });
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
    // A fresh tsx process loads the whole SDK: slow on a loaded 2-core machine.
  }, 120_000);
});
