import { spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeEach, describe, expect, it } from "vitest";
import { atomicWriteFile } from "../../src/config/atomic-write.js";

const root0 = mkdtempSync(path.join(tmpdir(), "dfgw-atomic-"));
afterAll(() => rmSync(root0, { recursive: true, force: true }));
// Each test its own directory: a killed writer's temp file must not be seen by another test (any order).
let dir = root0;
beforeEach(() => { dir = mkdtempSync(path.join(root0, "t-")); });
const root = path.resolve(import.meta.dirname, "../..");

describe("atomicWriteFile", () => {
  it("replaces the file content and leaves no temp file", () => {
    const file = path.join(dir, "a.yaml");
    writeFileSync(file, "old");
    atomicWriteFile(file, "new");
    expect(readFileSync(file, "utf8")).toBe("new");
    expect(readdirSync(dir).filter((f) => f.endsWith(".tmp"))).toEqual([]);
  });

  it("removes its temp file and keeps the old content when the rename fails", () => {
    const file = path.join(dir, "b.yaml");
    writeFileSync(file, "old");
    expect(() => atomicWriteFile(file, "new", { beforeRename: () => { throw new Error("disk gone"); } })).toThrow("disk gone");
    expect(readFileSync(file, "utf8")).toBe("old");
    expect(readdirSync(dir).filter((f) => f.startsWith(".b.yaml"))).toEqual([]);
  });

  it("leaves the old file intact when the writer process is killed between temp write and rename", async () => {
    const file = path.join(dir, "config.yaml");
    writeFileSync(file, "name: old\n");
    const script = `
      import { atomicWriteFile } from ${JSON.stringify(path.join(root, "src/config/atomic-write.ts"))};
      atomicWriteFile(${JSON.stringify(file)}, "name: new\\n" + "x".repeat(100000), {
        beforeRename: () => { process.stdout.write("ready\\n"); Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0); },
      });`;
    const child = spawn(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], { cwd: root, stdio: ["ignore", "pipe", "inherit"] });
    await new Promise<void>((resolve) => child.stdout.on("data", (d) => String(d).includes("ready") && resolve()));
    const temp = readdirSync(dir).find((f) => f.startsWith(".config.yaml.") && f.endsWith(".tmp"));
    expect(temp).toBeDefined();
    expect(readFileSync(path.join(dir, temp!), "utf8")).toContain("name: new");
    child.kill("SIGKILL");
    await new Promise((r) => child.on("exit", r));
    expect(readFileSync(file, "utf8")).toBe("name: old\n");
  });
});

// Issue 42 item 10: temp files of killed writes are removed in every directory the gateway writes atomically.
describe("temp files of killed atomic writes", () => {
  const hourAgo = () => new Date(Date.now() - 3600_000);

  it("are removed by the first write to their directory from a later process, young ones are kept", async () => {
    const sub = mkdtempSync(path.join(dir, "killed-"));
    const file = path.join(sub, "memory.json");
    const script = `
      import { atomicWriteFile } from ${JSON.stringify(path.join(root, "src/config/atomic-write.ts"))};
      atomicWriteFile(${JSON.stringify(file)}, "x".repeat(100000), {
        beforeRename: () => { process.stdout.write("ready\\n"); Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0); },
      });`;
    const child = spawn(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], { cwd: root, stdio: ["ignore", "pipe", "inherit"] });
    await new Promise<void>((resolve) => child.stdout.on("data", (d) => String(d).includes("ready") && resolve()));
    child.kill("SIGKILL");
    await new Promise((r) => child.on("exit", r));
    const [left] = readdirSync(sub).filter((f) => f.endsWith(".tmp"));
    expect(left).toBeDefined();
    utimesSync(path.join(sub, left), hourAgo(), hourAgo());
    const young = path.join(sub, ".other.json.0123456789ab.tmp");
    writeFileSync(young, "in progress elsewhere");
    atomicWriteFile(path.join(sub, "USER.md"), "profile"); // this process's first write there
    expect(readdirSync(sub).sort()).toEqual([".other.json.0123456789ab.tmp", "USER.md"]);
  });

  it("are swept through every writer, e.g. the memory store and the user profile", async () => {
    const { FileMemoryStore } = await import("../../src/agents/memory/file-memory-store.js");
    const { AgentStore } = await import("../../src/config/agent-store.js");
    const memRoot = mkdtempSync(path.join(dir, "mem-"));
    const memory = new FileMemoryStore(memRoot);
    const memDir = path.dirname(memory.fileFor("u1", "a1"));
    const agentsRoot = mkdtempSync(path.join(dir, "agents-"));
    mkdirSync(memDir, { recursive: true });
    const memTemp = path.join(memDir, ".a1.json.0123456789ab.tmp");
    const profileTemp = path.join(agentsRoot, ".USER.md.0123456789ab.tmp");
    for (const t of [memTemp, profileTemp]) {
      writeFileSync(t, "killed");
      utimesSync(t, hourAgo(), hourAgo());
    }
    new AgentStore(agentsRoot).writeUserProfile("me");
    memory.save("u1", "a1", memory.load("u1", "a1"));
    expect(existsSync(profileTemp)).toBe(false);
    expect(readdirSync(memDir)).toEqual(["a1.json"]);
  });
});
