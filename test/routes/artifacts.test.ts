import { mkdirSync, symlinkSync, writeFileSync } from "node:fs";
import { request as httpRequest } from "node:http";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { postJson, startHarness, type Harness } from "../support/harness.js";

let h: Harness;
let userData: string;
beforeAll(async () => {
  h = await startHarness("models:\n  - name: s\n    use: deerflow-gateway:ScriptedChatModel\n    model: s\n");
  await postJson(`${h.url}/threads`, { thread_id: "t-art" });
  await postJson(`${h.url}/threads`, { thread_id: "t-other" });
  userData = path.join(process.env.DEER_FLOW_HOME!, "users", "default", "threads", "t-art", "user-data");
  const other = path.join(process.env.DEER_FLOW_HOME!, "users", "default", "threads", "t-other", "user-data", "outputs");
  for (const d of ["outputs/charts", "workspace", "uploads"]) mkdirSync(path.join(userData, d), { recursive: true });
  mkdirSync(other, { recursive: true });
  writeFileSync(path.join(other, "theirs.txt"), "other thread");
  writeFileSync(path.join(userData, "outputs", "report.md"), "# Report\n");
  writeFileSync(path.join(userData, "outputs", "page.html"), "<script>alert(1)</script>");
  writeFileSync(path.join(userData, "outputs", "logo.svg"), "<svg/>");
  writeFileSync(path.join(userData, "outputs", "charts", "c.png"), Buffer.from([0x89, 0x50, 0x4e, 0x47]));
  writeFileSync(path.join(userData, "outputs", "blob.xyz"), "?");
  writeFileSync(path.join(userData, "uploads", "in.csv"), "a,b\n");
  writeFileSync(path.join(h.dir, "secret.txt"), "TOP-SECRET");
  symlinkSync(path.join(h.dir, "secret.txt"), path.join(userData, "outputs", "leak.txt"));
  symlinkSync(h.dir, path.join(userData, "outputs", "leak-dir"));
});
afterAll(async () => h.close());

/** GET with the path exactly as given (fetch would resolve `..` and re-encode before sending). */
function rawGet(rawPath: string): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; text: string }> {
  const { hostname, port } = new URL(h.url);
  return new Promise((resolve, reject) => {
    const req = httpRequest({ hostname, port, method: "GET", path: rawPath, agent: false }, (res) => {
      let text = "";
      res.on("data", (c) => (text += c));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text }));
    });
    req.on("error", reject);
    req.end();
  });
}
const base = "/api/threads/t-art/artifacts";

describe("GET /api/threads/{id}/artifacts/{path}", () => {
  it("serves a file of the thread's outputs by virtual, area-relative or outputs-relative path, with its content type", async () => {
    for (const p of ["mnt/user-data/outputs/report.md", "outputs/report.md", "report.md"]) {
      const res = await rawGet(`${base}/${p}`);
      expect(res.status, p).toBe(200);
      expect(res.text).toBe("# Report\n");
      expect(res.headers["content-type"]).toBe("text/markdown; charset=utf-8");
      expect(res.headers["x-content-type-options"]).toBe("nosniff");
      expect(res.headers["content-disposition"]).toBe("inline; filename*=UTF-8''report.md");
    }
    expect((await rawGet(`${base}/mnt/user-data/outputs/charts/c.png`)).headers["content-type"]).toBe("image/png");
    expect((await rawGet(`${base}/mnt/user-data/outputs/blob.xyz`)).headers["content-type"]).toBe("application/octet-stream");
    const upload = await rawGet(`${base}/mnt/user-data/uploads/in.csv`);
    expect(upload.status).toBe(200);
    expect(upload.headers["content-type"]).toBe("text/csv; charset=utf-8");
  });

  it("sends HTML and SVG as attachments always, anything else when ?download=true", async () => {
    expect((await rawGet(`${base}/mnt/user-data/outputs/page.html`)).headers["content-disposition"]).toMatch(/^attachment;/);
    expect((await rawGet(`${base}/mnt/user-data/outputs/logo.svg`)).headers["content-disposition"]).toMatch(/^attachment;/);
    expect((await rawGet(`${base}/mnt/user-data/outputs/report.md?download=true`)).headers["content-disposition"]).toMatch(/^attachment;/);
  });

  it.each([
    ["'../' segments", `${base}/mnt/user-data/outputs/../../../../../secret.txt`],
    ["'../' into another thread", `${base}/mnt/user-data/../../../t-other/user-data/outputs/theirs.txt`],
    ["encoded '../'", `${base}/mnt/user-data/outputs/%2e%2e%2f%2e%2e%2f%2e%2e%2fsecret.txt`],
    ["encoded slashes", `${base}/mnt/user-data/outputs/..%2F..%2Fsecret.txt`],
    ["double-encoded separators", `${base}/mnt/user-data/outputs/%252e%252e%252fsecret.txt`],
    ["a symlink to a file outside", `${base}/mnt/user-data/outputs/leak.txt`],
    ["a symlink to a directory outside", `${base}/mnt/user-data/outputs/leak-dir/secret.txt`],
    ["a very long name", `${base}/mnt/user-data/outputs/${"n".repeat(300)}.txt`],
    ["a very long path", `${base}/mnt/user-data/outputs/${"d/".repeat(2500)}x.txt`],
    ["backslashes", `${base}/mnt/user-data/outputs/..\\..\\secret.txt`],
  ])("refuses %s with 403 and a clear message", async (_label, rawPath) => {
    const res = await rawGet(rawPath);
    expect(res.status).toBe(403);
    expect(JSON.parse(res.text).detail).toMatch(/Path traversal|percent-encoded|outside the thread's directories|too long|Backslashes/);
    expect(res.text).not.toContain("TOP-SECRET");
  });

  it("answers 404 for missing files and unknown threads, 422 for a directory or a bad thread id", async () => {
    expect((await rawGet(`${base}/mnt/user-data/outputs/nope.md`)).status).toBe(404);
    expect((await rawGet("/api/threads/t-missing/artifacts/mnt/user-data/outputs/report.md")).status).toBe(404);
    const dir = await rawGet(`${base}/mnt/user-data/outputs/charts`);
    expect(dir.status).toBe(422);
    expect(JSON.parse(dir.text).detail).toBe("Path is not a file: /mnt/user-data/outputs/charts");
    expect((await rawGet("/api/threads/bad.id/artifacts/report.md")).status).toBe(422);
  });

  it("only reaches the thread's own files: another thread's outputs are not found from here", async () => {
    expect((await rawGet(`${base}/mnt/user-data/outputs/theirs.txt`)).status).toBe(404);
    expect((await rawGet("/api/threads/t-other/artifacts/mnt/user-data/outputs/theirs.txt")).text).toBe("other thread");
  });
});
