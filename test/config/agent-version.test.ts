import { spawn } from "node:child_process";
import { existsSync, lstatSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { parse as parseYaml } from "yaml";
import { loadCustomAgent } from "../../src/config/agent-config.js";
import { AgentStore } from "../../src/config/agent-store.js";

// Issue 42 item 9: an agent update replaces config.yaml and SOUL.md as one change, so a writer killed at any
// point leaves the old pair or the new one, never a version nobody wrote.
const root = path.resolve(import.meta.dirname, "../..");
let agents: string;
beforeEach(() => {
  agents = mkdtempSync(path.join(tmpdir(), "dfgw-agent-version-"));
});
afterEach(() => rmSync(agents, { recursive: true, force: true }));

const agentDir = () => path.join(agents, "default", "pair");

/** The pair as a DeerFlow reader sees it (opening the two files directly): whether it is one written version. */
function readPair(): { description: string; soul: string; torn: boolean } {
  const doc = parseYaml(readFileSync(path.join(agentDir(), "config.yaml"), "utf8")) as { description: string };
  const soul = readFileSync(path.join(agentDir(), "SOUL.md"), "utf8");
  return { description: doc.description, soul, torn: soul !== `soul of ${doc.description}` };
}

/**
 * Runs a child that updates the agent; `crashAfter` = k makes it SIGKILL itself right after its k-th rename,
 * symlink or removal (the steps that change what readers see); `loop` makes it update forever. Resolves with
 * whether the child died by SIGKILL.
 */
function runWriter(opts: { crashAfter?: number; loop?: boolean; onStarted?: (kill: () => void) => void }): Promise<boolean> {
  const script = `
    import fs from "node:fs";
    import { syncBuiltinESMExports } from "node:module";
    const crashAfter = ${opts.crashAfter ?? 0};
    let steps = 0;
    for (const name of ["renameSync", "symlinkSync", "rmSync", "unlinkSync"]) {
      const real = fs[name];
      fs[name] = (...args) => {
        const out = real(...args);
        if (crashAfter && ++steps === crashAfter) process.kill(process.pid, "SIGKILL");
        return out;
      };
    }
    syncBuiltinESMExports();
    const { AgentStore } = await import(${JSON.stringify(path.join(root, "src/config/agent-store.ts"))});
    const store = new AgentStore(${JSON.stringify(agents)});
    process.stdout.write("started\\n");
    let i = 1;
    do {
      const v = "v" + Date.now() + "-" + i++;
      await store.update("pair", { description: v, soul: "soul of " + v });
    } while (${opts.loop ? "true" : "false"});`;
  const child = spawn(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], { cwd: root, stdio: ["ignore", "pipe", "inherit"] });
  child.stdout.on("data", (d) => String(d).includes("started") && opts.onStarted?.(() => child.kill("SIGKILL")));
  return new Promise((resolve) => child.on("exit", (_code, signal) => resolve(signal === "SIGKILL")));
}

describe("agent update under SIGKILL", () => {
  it("leaves the old or the new pair at every crash point, for a plain agent and an already versioned one", async () => {
    const store = new AgentStore(agents);
    await store.create({ name: "pair", description: "v0", soul: "soul of v0" });
    const seen = new Set<string>();
    // Crash after step 1, 2, ... until an update completes without reaching the crash point; then again on the
    // layout that update left (the second round starts from the linked layout).
    for (const round of [1, 2]) {
      for (let k = 1; ; k++) {
        const before = readPair();
        const killed = await runWriter({ crashAfter: k });
        const after = readPair();
        expect(after.torn, `round ${round}, crash after step ${k}: ${JSON.stringify(after)}`).toBe(false);
        seen.add(after.description === before.description ? "old" : "new");
        if (!killed) break;
        expect(k, "an update takes a bounded number of steps").toBeLessThan(30);
      }
    }
    expect(seen).toEqual(new Set(["old", "new"]));
    // The agent still works through the API, and DeerFlow's layout is kept: config.yaml and SOUL.md at the top.
    const record = store.get("pair");
    expect(record.soul).toBe(`soul of ${record.description}`);
    expect(lstatSync(path.join(agentDir(), "config.yaml")).isSymbolicLink()).toBe(true);
  }, 120_000);

  it("never shows a torn pair over repeated random SIGKILLs of a writer updating in a loop", async () => {
    const store = new AgentStore(agents);
    await store.create({ name: "pair", description: "v0", soul: "soul of v0" });
    let torn = 0;
    for (let i = 0; i < 6; i++) {
      await runWriter({ loop: true, onStarted: (kill) => setTimeout(kill, Math.random() * 300) });
      if (readPair().torn) torn++;
    }
    expect(torn).toBe(0);
  }, 120_000);

  it("keeps memory data and unmanaged keys across updates, and delete removes every version", async () => {
    const store = new AgentStore(agents);
    await store.create({ name: "pair", description: "v0", soul: "soul of v0" });
    const { writeFileSync } = await import("node:fs");
    writeFileSync(path.join(agentDir(), "memory.json"), "{}");
    writeFileSync(path.join(agentDir(), "config.yaml"), "name: pair\ndescription: v0\ngithub: {repo: a/b}\n");
    await store.update("pair", { soul: "soul of v0 again" });
    await store.update("pair", { description: "v2" });
    expect(store.get("pair")).toMatchObject({ description: "v2", soul: "soul of v0 again" });
    expect(readFileSync(path.join(agentDir(), "memory.json"), "utf8")).toBe("{}");
    expect(readFileSync(path.join(agentDir(), "config.yaml"), "utf8")).toContain("repo: a/b");
    expect(readdirSync(path.join(agentDir(), ".versions")).length).toBe(2); // current + one version
    await store.delete("pair");
    expect(existsSync(agentDir())).toBe(false);
  });
});

describe("reading an agent while it is updated", () => {
  it("gives a run the config and soul of one version, never one file of each, while a writer updates in a loop", async () => {
    const store = new AgentStore(agents);
    await store.create({ name: "pair", description: "v0", soul: "soul of v0" });
    let stop: (() => void) | undefined;
    const started = new Promise<void>((resolve) => {
      void runWriter({ loop: true, onStarted: (kill) => ((stop = kill), resolve()) });
    });
    await started;
    const versions = new Set<string>();
    let reads = 0;
    try {
      // Until the writer has been seen to publish 20 versions (bounded by the test timeout), each read is one pair.
      while (versions.size < 20) {
        const { config, soul } = loadCustomAgent("pair", "default", agents);
        expect(soul, `read ${reads}: config ${config.description}`).toBe(`soul of ${config.description}`);
        versions.add(config.description!);
        reads++;
        if (reads % 50 === 0) await new Promise((r) => setImmediate(r));
      }
    } finally {
      stop?.();
    }
    expect(versions.size).toBeGreaterThanOrEqual(20);
  }, 60_000);
});

describe("start-up sweep of agent versions", () => {
  it("removes old versions the pointer does not name and half-swapped pointers, keeps the current and young ones", async () => {
    const { lutimesSync, mkdirSync, symlinkSync, utimesSync, writeFileSync } = await import("node:fs");
    const { sweepLeftovers } = await import("../../src/config/leftovers.js");
    const store = new AgentStore(agents);
    await store.create({ name: "pair", description: "v0", soul: "soul of v0" });
    await store.update("pair", { description: "v1", soul: "soul of v1" });
    const versions = path.join(agentDir(), ".versions");
    const stray = path.join(versions, "0123456789ab");
    mkdirSync(stray);
    writeFileSync(path.join(stray, "config.yaml"), "name: pair\n");
    const young = path.join(versions, "abcdef012345");
    mkdirSync(young);
    const pointer = path.join(versions, ".current.0123456789ab.tmp");
    symlinkSync("0123456789ab", pointer);
    const hourAgo = new Date(Date.now() - 3600_000);
    utimesSync(stray, hourAgo, hourAgo);
    lutimesSync(pointer, hourAgo, hourAgo);
    const report = sweepLeftovers(agents, path.join(agents, "home"), 60_000);
    expect(report.agentVersions).toBe(2);
    expect(existsSync(stray)).toBe(false);
    expect(existsSync(young)).toBe(true); // may be another process's update in progress
    expect(readPair()).toMatchObject({ description: "v1", torn: false });
  });
});
