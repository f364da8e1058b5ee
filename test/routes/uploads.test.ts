import { existsSync, mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { request as httpRequest } from "node:http";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { claimPendingThread } from "../../src/runtime/webapp/pending-threads.js";
import { postJson, startHarness, type Harness } from "../support/harness.js";

const CONFIG = "models:\n  - name: s\n    use: deerflow-gateway:ScriptedChatModel\n    model: s\nuploads:\n  max_files: 3\n  max_file_size: 100\n  max_total_size: 150\n";
let h: Harness;
let uploadsDir: string;
beforeEach(async () => {
  h = await startHarness(CONFIG);
  await postJson(`${h.url}/threads`, { thread_id: "t-up" });
  uploadsDir = path.join(process.env.DEER_FLOW_HOME!, "users", "default", "threads", "t-up", "user-data", "uploads");
});
afterEach(async () => h.close());

/** A raw multipart body, so file names reach the server exactly as written (no client-side escaping). */
function multipart(files: { name: string; content: string | Buffer }[]): { body: Uint8Array<ArrayBuffer>; headers: Record<string, string> } {
  const boundary = "----dfgw-test-boundary";
  const parts: Buffer[] = [];
  for (const f of files) {
    parts.push(Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="files"; filename="${f.name}"\r\nContent-Type: application/octet-stream\r\n\r\n`, "utf8"));
    parts.push(Buffer.isBuffer(f.content) ? f.content : Buffer.from(f.content));
    parts.push(Buffer.from("\r\n"));
  }
  parts.push(Buffer.from(`--${boundary}--\r\n`));
  return { body: new Uint8Array(Buffer.concat(parts)), headers: { "content-type": `multipart/form-data; boundary=${boundary}` } };
}
/** Sends a request with the path exactly as given (fetch would resolve `..` before sending). */
function rawRequest(method: string, rawPath: string): Promise<{ status: number; body: any }> {
  const { hostname, port } = new URL(h.url);
  return new Promise((resolve, reject) => {
    const req = httpRequest({ hostname, port, method, path: rawPath, agent: false }, (res) => {
      let text = "";
      res.on("data", (c) => (text += c));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body: text ? JSON.parse(text) : null }));
    });
    req.on("error", reject);
    req.end();
  });
}
const upload = (files: { name: string; content: string | Buffer }[], thread = "t-up") => {
  const { body, headers } = multipart(files);
  return fetch(`${h.url}/api/threads/${thread}/uploads`, { method: "POST", headers, body });
};
/** Every file under the temp project except the checkpoint database and the thread's uploads. */
const strayFiles = () => {
  const out: string[] = [];
  const walk = (dir: string) => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const full = path.join(dir, e.name);
      if (full === uploadsDir || full.includes(`${path.sep}data${path.sep}`)) continue;
      if (e.isDirectory()) walk(full);
      else out.push(path.relative(h.dir, full));
    }
  };
  walk(h.dir);
  return out.filter((f) => f !== "config.yaml" && !/\.sqlite|\.db/.test(f));
};

describe("POST /api/threads/{id}/uploads", () => {
  it("stores files in the thread's uploads directory and reports their virtual paths and artifact URLs", async () => {
    const res = await upload([{ name: "notes.txt", content: "hello" }, { name: "data.csv", content: "a,b\n1,2\n" }]);
    expect(res.status).toBe(200);
    const body = await res.json();
    expect(body.success).toBe(true);
    expect(body.files.map((f: { filename: string }) => f.filename)).toEqual(["notes.txt", "data.csv"]);
    expect(body.files[0]).toMatchObject({ size: 5, path: "/mnt/user-data/uploads/notes.txt", virtual_path: "/mnt/user-data/uploads/notes.txt", extension: ".txt", artifact_url: "/api/threads/t-up/artifacts/mnt/user-data/uploads/notes.txt" });
    expect(readFileSync(path.join(uploadsDir, "notes.txt"), "utf8")).toBe("hello");
    expect(readdirSync(uploadsDir).sort()).toEqual(["data.csv", "notes.txt"]);
    const listed = await (await fetch(`${h.url}/api/threads/t-up/uploads`)).json();
    expect(listed.count).toBe(2);
    expect(listed.files.map((f: { filename: string }) => f.filename)).toEqual(["data.csv", "notes.txt"]);
  });

  it("lists uploads in code point order, as DeerFlow's sorted(): capitals before lower case, no locale folding", async () => {
    expect((await upload([{ name: "b.txt", content: "1" }, { name: "B.txt", content: "2" }, { name: "a.txt", content: "3" }])).status).toBe(200);
    const listed = await (await fetch(`${h.url}/api/threads/t-up/uploads/list`)).json();
    expect(listed.files.map((f: { filename: string }) => f.filename)).toEqual(["B.txt", "a.txt", "b.txt"]);
  });

  it("strips leading dots and replaces an earlier upload of the same name (even a symlink, never its target)", async () => {
    const outside = path.join(h.dir, "outside.txt");
    writeFileSync(outside, "keep me");
    mkdirSync(uploadsDir, { recursive: true });
    symlinkSync(outside, path.join(uploadsDir, "link.txt"));
    const res = await upload([{ name: ".env", content: "A=1" }, { name: "link.txt", content: "new" }]);
    expect(res.status).toBe(200);
    expect((await res.json()).files.map((f: { filename: string }) => f.filename)).toEqual(["env", "link.txt"]);
    expect(readFileSync(outside, "utf8")).toBe("keep me");
    expect(readFileSync(path.join(uploadsDir, "link.txt"), "utf8")).toBe("new");
  });

  it.each([
    ["'..' components", "../../evil.txt"],
    ["an absolute path", "/etc/evil.txt"],
    ["a directory", "sub/evil.txt"],
    ["backslashes", "..\\\\..\\\\evil.txt"],
    ["percent-encoded separators", "%2e%2e%2fevil.txt"],
    ["a bare '..'", ".."],
    ["only dots", "..."],
    ["control characters", "bad\u0001name.txt"],
    ["a very long name", `${"n".repeat(300)}.txt`],
  ])("refuses a file name with %s (422) and writes nothing", async (_label, name) => {
    const res = await upload([{ name: "ok.txt", content: "fine" }, { name, content: "pwned" }]);
    expect(res.status).toBe(422);
    expect((await res.json()).detail).toMatch(/^Invalid filename/);
    expect(existsSync(uploadsDir) ? readdirSync(uploadsDir) : []).toEqual([]);
    expect(strayFiles()).toEqual([]);
  });

  it("enforces uploads.max_files, max_file_size and max_total_size with 413 and leaves nothing behind", async () => {
    const tooMany = await upload([1, 2, 3, 4].map((i) => ({ name: `f${i}.txt`, content: "x" })));
    expect(tooMany.status).toBe(413);
    expect((await tooMany.json()).detail).toBe("Too many files: maximum is 3");
    const tooBig = await upload([{ name: "big.bin", content: Buffer.alloc(101) }]);
    expect(tooBig.status).toBe(413);
    expect((await tooBig.json()).detail).toContain("File too large: big.bin");
    const tooMuch = await upload([{ name: "a.bin", content: Buffer.alloc(80) }, { name: "b.bin", content: Buffer.alloc(80) }]);
    expect(tooMuch.status).toBe(413);
    expect((await tooMuch.json()).detail).toContain("Total upload size too large");
    expect(readdirSync(uploadsDir)).toEqual([]);
  });

  it("answers 404 for a thread claimed by another user, 422 for a bad thread id, 400 without files or multipart", async () => {
    claimPendingThread(process.env.DEER_FLOW_HOME!, "someone-elses", "other-user");
    expect((await upload([{ name: "a.txt", content: "x" }], "someone-elses")).status).toBe(404);
    expect((await fetch(`${h.url}/api/threads/someone-elses/uploads`)).status).toBe(404);
    expect(await (await fetch(`${h.url}/api/threads/someone-elses/uploads/list`)).json()).toEqual({ files: [], count: 0 });
    expect((await upload([{ name: "a.txt", content: "x" }], "bad..id")).status).toBe(422);
    const empty = multipart([]);
    const none = await fetch(`${h.url}/api/threads/t-up/uploads`, { method: "POST", headers: empty.headers, body: empty.body });
    expect(none.status).toBe(400);
    expect((await none.json()).detail).toBe("No files provided");
    const json = await postJson(`${h.url}/api/threads/t-up/uploads`, { files: ["a"] });
    expect(json.status).toBe(400);
  });
});

describe("DELETE /api/threads/{id}/uploads/{filename}", () => {
  it("deletes an upload; 404 when it is missing", async () => {
    await upload([{ name: "gone.txt", content: "x" }]);
    const res = await fetch(`${h.url}/api/threads/t-up/uploads/gone.txt`, { method: "DELETE" });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ success: true, message: "Deleted gone.txt" });
    expect(existsSync(path.join(uploadsDir, "gone.txt"))).toBe(false);
    expect((await fetch(`${h.url}/api/threads/t-up/uploads/gone.txt`, { method: "DELETE" })).status).toBe(404);
    expect((await fetch(`${h.url}/api/threads/nope/uploads/gone.txt`, { method: "DELETE" })).status).toBe(404);
  });

  it.each([
    ["encoded '../'", "..%2F..%2F..%2Fconfig.yaml"],
    ["encoded dots and slash", "%2e%2e%2f%2e%2e%2fconfig.yaml"],
    ["double-encoded separators", "%252e%252e%252fconfig.yaml"],
    ["a bare '..'", ".."],
    ["a very long name", "n".repeat(400)],
  ])("refuses %s with 422 and deletes nothing", async (_label, name) => {
    mkdirSync(uploadsDir, { recursive: true });
    writeFileSync(path.join(uploadsDir, "keep.txt"), "x");
    const res = await rawRequest("DELETE", `/api/threads/t-up/uploads/${name}`);
    expect(res.status).toBe(422);
    expect(res.body.detail).toMatch(/^Invalid filename/);
    expect(existsSync(h.configPath)).toBe(true);
    expect(readdirSync(uploadsDir)).toEqual(["keep.txt"]);
  });
});
