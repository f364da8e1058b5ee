import { connect } from "node:net";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { postJson, startHarness, type Harness } from "../support/harness.js";

// Issue 42 item 13: every request the gateway refuses before a route runs is answered `{detail}` with the right
// status (over a real socket: inject never reaches Node's HTTP parser), and a huge metadata filter is a 422.
const CONFIG = "models:\n  - name: s\n    use: deerflow-gateway:ScriptedChatModel\n    model: s\n";
let h: Harness;
beforeEach(async () => {
  h = await startHarness(CONFIG);
});
afterEach(async () => h.close());

/** Sends raw bytes and resolves with the status and parsed body of the reply (the server closes after it). */
function raw(request: string): Promise<{ status: number; body: unknown; text: string }> {
  const { port } = new URL(h.url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), "127.0.0.1", () => socket.write(request));
    let text = "";
    socket.setEncoding("utf8");
    socket.on("data", (d) => (text += d));
    socket.on("error", reject);
    socket.on("close", () => {
      const [head, ...rest] = text.split("\r\n\r\n");
      const body = rest.join("\r\n\r\n");
      let parsed: unknown = null;
      try {
        parsed = JSON.parse(body);
      } catch {
        parsed = body;
      }
      resolve({ status: Number(head.split(" ")[1]), body: parsed, text });
    });
  });
}

describe("requests the HTTP parser rejects", () => {
  it.each([
    ["a bad Content-Length", "POST /threads HTTP/1.1\r\nHost: localhost\r\nContent-Length: abc\r\n\r\n", 400],
    ["Content-Length with chunked encoding", "POST /threads HTTP/1.1\r\nHost: localhost\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n{}", 400],
    ["a header block over the limit", `GET /health HTTP/1.1\r\nHost: localhost\r\nX-Big: ${"a".repeat(20_000)}\r\n\r\n`, 431],
    ["a malformed request line", "GET /health HTTP/1.1 extra\r\nHost: localhost\r\n\r\n", 400],
    ["an invalid header name", "GET /health HTTP/1.1\r\nHost: localhost\r\nBad Header: x\r\n\r\n", 400],
    ["a bad chunk size", "POST /threads HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n", 400],
  ])("answers %s with {detail} and its status", async (_name, request, status) => {
    const res = await raw(request);
    expect(res.status).toBe(status);
    expect(res.body).toEqual({ detail: expect.any(String) });
    expect(res.text).not.toContain("statusCode");
  });
});

describe("requests refused before a route runs", () => {
  it("answers malformed JSON, a bad URL and an unknown route with {detail}", async () => {
    const json = await fetch(`${h.url}/threads`, { method: "POST", headers: { "content-type": "application/json" }, body: "{not json" });
    expect(json.status).toBe(422);
    expect(await json.json()).toHaveProperty("detail");
    const url = await raw("GET /threads/%zz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
    expect(url.status).toBe(400);
    expect(url.body).toEqual({ detail: expect.any(String) });
    const missing = await fetch(`${h.url}/no/such/route`);
    expect(missing.status).toBe(404);
    expect(await missing.json()).toEqual({ detail: expect.any(String) });
  });
});

describe("POST /threads/search metadata filter", () => {
  it("is a 422 {detail} past 64 keys (it was a 500 at about 450) and works at the limit", async () => {
    await postJson(`${h.url}/threads`, { thread_id: "t1", metadata: { k0: 0 } });
    const keys = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${i}`, i]));
    const huge = await postJson(`${h.url}/threads/search`, { metadata: keys(500) });
    expect(huge.status).toBe(422);
    expect(JSON.stringify(await huge.json())).toContain("at most 64 keys");
    const atLimit = await postJson(`${h.url}/threads/search`, { metadata: keys(64) });
    expect(atLimit.status).toBe(200);
    const one = await postJson(`${h.url}/threads/search`, { metadata: { k0: 0 } });
    expect((await one.json()).map((t: { thread_id: string }) => t.thread_id)).toEqual(["t1"]);
  });
});
