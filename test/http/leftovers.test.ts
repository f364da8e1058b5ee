import { existsSync, mkdirSync, readdirSync, readFileSync, utimesSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { buildTestApp, postJson, startHarness, type Harness } from "../support/harness.js";

// Issue 13 items 6-7: agent creation is atomic, what killed writers left is swept at start, and two uploads of
// the same name in one request are both kept.
const CONFIG = "agents_api:\n  enabled: true\nmodels:\n  - name: s\n    use: deerflow-gateway:ScriptedChatModel\n    model: s\n";
let h: Harness;
let agents: string;
let uploads: string;
beforeEach(async () => {
  h = await startHarness(CONFIG);
  agents = path.join(process.env.DEER_FLOW_AGENTS_DIR!, "default");
  uploads = path.join(process.env.DEER_FLOW_HOME!, "users", "default", "threads", "t1", "user-data", "uploads");
});
afterEach(async () => h.close());

const age = (p: string) => {
  const t = new Date(Date.now() - 3600_000);
  utimesSync(p, t, t);
};

describe("agent creation", () => {
  it("is all or nothing: no staging directory stays, concurrent creates give one 201 and 409s", async () => {
    const results = await Promise.all(Array.from({ length: 5 }, () => postJson(`${h.url}/api/agents`, { name: "racer", soul: "You race." })));
    expect(results.map((r) => r.status).sort()).toEqual([201, 409, 409, 409, 409]);
    expect(readdirSync(agents)).toEqual(["racer"]);
    expect(readdirSync(path.join(agents, "racer")).sort()).toEqual(["SOUL.md", "config.yaml"]);
    expect(readFileSync(path.join(agents, "racer", "SOUL.md"), "utf8")).toBe("You race.");
  });

  it("deletes a directory an interrupted create left empty (204, not 409), but keeps memory-only data", async () => {
    mkdirSync(path.join(agents, "ghost"), { recursive: true });
    writeFileSync(path.join(agents, "ghost", ".config.yaml.0123456789ab.tmp"), "name: gh");
    expect((await fetch(`${h.url}/api/agents/ghost`)).status).toBe(404);
    expect((await fetch(`${h.url}/api/agents/ghost`, { method: "DELETE" })).status).toBe(204);
    expect((await postJson(`${h.url}/api/agents`, { name: "ghost", soul: "Back." })).status).toBe(201);
    mkdirSync(path.join(agents, "memo"));
    writeFileSync(path.join(agents, "memo", "memory.json"), "{}");
    expect((await fetch(`${h.url}/api/agents/memo`, { method: "DELETE" })).status).toBe(409);
    expect(existsSync(path.join(agents, "memo", "memory.json"))).toBe(true);
  });
});

describe("start-up sweep", () => {
  it("removes old agent staging dirs, empty agent dirs and upload parts; keeps young parts and memory data", async () => {
    mkdirSync(uploads, { recursive: true });
    const staging = path.join(agents, ".staging-half-0123456789ab");
    mkdirSync(staging, { recursive: true });
    writeFileSync(path.join(staging, "config.yaml"), "name: half\n");
    const empty = path.join(agents, "empty");
    mkdirSync(empty);
    const memo = path.join(agents, "memo");
    mkdirSync(memo);
    writeFileSync(path.join(memo, "memory.json"), "{}");
    const oldPart = path.join(uploads, ".upload-11111111-1111-1111-1111-111111111111.part");
    const youngPart = path.join(uploads, ".upload-22222222-2222-2222-2222-222222222222.part");
    writeFileSync(oldPart, Buffer.alloc(1024));
    writeFileSync(youngPart, "x");
    writeFileSync(path.join(uploads, "kept.txt"), "kept");
    for (const p of [staging, empty, memo, oldPart]) age(p);

    // A restart over the same directories.
    const restarted = await buildTestApp();
    try {
      expect(existsSync(staging)).toBe(false);
      expect(existsSync(empty)).toBe(false);
      expect(existsSync(oldPart)).toBe(false);
      expect(existsSync(youngPart)).toBe(true);
      expect(readFileSync(path.join(memo, "memory.json"), "utf8")).toBe("{}");
      expect(readFileSync(path.join(uploads, "kept.txt"), "utf8")).toBe("kept");
      const created = await restarted.inject({ method: "POST", url: "/api/agents", payload: { name: "empty", soul: "Now real." } });
      expect(created.statusCode).toBe(201);
    } finally {
      await restarted.close();
    }
  });
});

describe("uploads of the same name", () => {
  it("keeps both files of one request under distinct names, recording the original name", async () => {
    await postJson(`${h.url}/threads`, { thread_id: "t1" });
    const form = new FormData();
    form.append("files", new Blob(["first"]), "report.txt");
    form.append("files", new Blob(["second"]), "report.txt");
    form.append("files", new Blob(["third"]), "report.txt");
    const res = await fetch(`${h.url}/api/threads/t1/uploads`, { method: "POST", body: form });
    expect(res.status).toBe(200);
    const { files } = await res.json();
    expect(files.map((f: { filename: string }) => f.filename)).toEqual(["report.txt", "report_1.txt", "report_2.txt"]);
    expect(files[0].original_filename).toBeUndefined();
    expect(files[1].original_filename).toBe("report.txt");
    expect(readFileSync(path.join(uploads, "report.txt"), "utf8")).toBe("first");
    expect(readFileSync(path.join(uploads, "report_1.txt"), "utf8")).toBe("second");
    expect(readFileSync(path.join(uploads, "report_2.txt"), "utf8")).toBe("third");
    const listed = await (await fetch(`${h.url}/api/threads/t1/uploads`)).json();
    expect(listed.count).toBe(3);
  });
});
