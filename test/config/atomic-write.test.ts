import { spawn } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { atomicWriteFile } from "../../src/config/atomic-write.js";

const dir = mkdtempSync(path.join(tmpdir(), "dfgw-atomic-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
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
