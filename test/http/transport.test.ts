import { request as httpRequest } from "node:http";
import { connect } from "node:net";
import { afterEach, describe, expect, it, vi } from "vitest";
import { postJson, startHarness, type Harness } from "../support/harness.js";

// Issue 13 items 8-11: CORS methods, Origin and Host checks, SSE headers at once, request time and size bounds,
// agent text limits.
const CONFIG = "agents_api:\n  enabled: true\nmodels:\n  - name: s\n    use: deerflow-gateway:ScriptedChatModel\n    model: s\n    token_delay_ms: 40\n";
let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

/** A request with exactly these headers (fetch does not let a caller set Host). */
function raw(url: string, method: string, path: string, headers: Record<string, string>, body?: string): Promise<{ status: number; text: string }> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const req = httpRequest({ hostname, port, method, path, headers, agent: false }, (res) => {
      let text = "";
      res.on("data", (c) => (text += c));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, text }));
    });
    req.on("error", reject);
    req.end(body);
  });
}

describe("CORS and Origin", () => {
  it("lets an allowed front end preflight DELETE, PUT and PATCH", async () => {
    h = await startHarness(CONFIG);
    for (const method of ["DELETE", "PUT", "PATCH"]) {
      const res = await fetch(`${h.url}/threads/x`, { method: "OPTIONS", headers: { origin: "http://localhost:3000", "access-control-request-method": method } });
      expect(res.headers.get("access-control-allow-methods"), method).toContain(method);
    }
  });

  it("refuses state-changing requests from other origins, multipart uploads included, and lets reads and non-browser clients through", async () => {
    h = await startHarness(CONFIG);
    await postJson(`${h.url}/threads`, { thread_id: "t1" });
    const form = () => {
      const f = new FormData();
      f.append("files", new Blob(["x"]), "a.txt");
      return f;
    };
    const evil = await fetch(`${h.url}/api/threads/t1/uploads`, { method: "POST", body: form(), headers: { origin: "http://evil.example" } });
    expect(evil.status).toBe(403);
    expect((await evil.json()).detail).toContain("not allowed");
    expect((await (await fetch(`${h.url}/api/threads/t1/uploads`)).json()).count).toBe(0);
    const nullOrigin = await fetch(`${h.url}/api/threads/t1/uploads`, { method: "POST", body: form(), headers: { origin: "null" } });
    expect(nullOrigin.status).toBe(403);
    const crossSite = await fetch(`${h.url}/threads/t1`, { method: "DELETE", headers: { "sec-fetch-site": "cross-site" } });
    expect(crossSite.status).toBe(403);
    expect((await postJson(`${h.url}/threads`, { thread_id: "t2" }, { origin: "https://evil.example" })).status).toBe(403);
    expect((await fetch(`${h.url}/threads/t1`, { method: "PATCH", headers: { origin: "http://evil.example", "content-type": "application/json" }, body: "{}" })).status).toBe(403);
    // Reads are not refused (CORS keeps the answer from a foreign page); local front ends and plain clients write.
    expect((await fetch(`${h.url}/threads/t1`, { headers: { origin: "http://evil.example" } })).status).toBe(200);
    expect((await fetch(`${h.url}/api/threads/t1/uploads`, { method: "POST", body: form(), headers: { origin: "http://localhost:3000" } })).status).toBe(200);
    // A page served under the gateway's own address (a proxy in front of both) is not cross-site.
    expect((await raw(h.url, "POST", "/threads", { host: "10.1.2.3:8080", origin: "https://10.1.2.3:8080", "content-type": "application/json" }, "{}")).status).toBe(200);
    expect((await raw(h.url, "POST", "/threads", { host: "10.1.2.3:8080", origin: "https://10.9.9.9:8080", "content-type": "application/json" }, "{}")).status).toBe(403);
    expect((await fetch(`${h.url}/threads/t1`, { method: "DELETE" })).status).toBe(200);
  });
});

describe("Host allowlist", () => {
  it("answers loopback names and IP literals, refuses other names (DNS rebinding), and serves configured ones", async () => {
    h = await startHarness(CONFIG);
    for (const host of ["localhost:8001", "127.0.0.1:8001", "[::1]:8001", "10.0.0.5", "app.localhost"]) {
      expect((await raw(h.url, "GET", "/health", { host })).status, host).toBe(200);
    }
    for (const host of ["evil.example", "evil.example:8001", "localhost.evil.example", "127.0.0.1.nip.io"]) {
      const res = await raw(h.url, "GET", "/health", { host });
      expect(res.status, host).toBe(403);
      expect(JSON.parse(res.text).detail).toContain("Host not allowed");
    }
    await h.close();
    h = await startHarness(CONFIG, { allowedHosts: ["gw.example.com", "*.corp.example"] });
    expect((await raw(h.url, "GET", "/health", { host: "gw.example.com" })).status).toBe(200);
    expect((await raw(h.url, "GET", "/health", { host: "a.corp.example:443" })).status).toBe(200);
    expect((await raw(h.url, "GET", "/health", { host: "localhost" })).status).toBe(403);
  });
});

describe("SSE headers", () => {
  it("reach the client at once for an enqueued run, Content-Location included", async () => {
    const hh = (h = await startHarness(CONFIG, { heartbeatMs: 0 }));
    await postJson(`${h.url}/threads`, { thread_id: "busy" });
    // Long enough to still be running on a loaded machine; cancelled once checked.
    const words = Array.from({ length: 1000 }, (_, i) => `w${i}`).join(" ");
    const first = await (await postJson(`${h.url}/threads/busy/runs`, { input: { messages: [{ role: "user", content: words }] } })).json();
    // The first run has started (a cold worker may still hold it as pending when it runs first in a shuffled order).
    await vi.waitFor(async () => expect((await (await fetch(`${hh.url}/threads/busy/runs/${first.run_id}`)).json()).status).toBe("running"), { timeout: 15_000, interval: 20 });
    const second = await postJson(`${h.url}/threads/busy/runs/stream`, { input: { messages: [{ role: "user", content: "next" }] }, multitask_strategy: "enqueue" });
    expect(second.status).toBe(200);
    expect(second.headers.get("content-location")).toMatch(/^\/threads\/busy\/runs\/[0-9a-f-]{36}$/);
    // The headers came while the first run was still going: nothing of the second run had happened yet.
    expect((await (await fetch(`${h.url}/threads/busy/runs/${first.run_id}`)).json()).status).toBe("running");
    await postJson(`${h.url}/threads/busy/runs/${first.run_id}/cancel`, {});
    await second.text();
  });
});

describe("request bounds", () => {
  it("cuts off a client that sends its body a byte at a time (408), and one that never finishes its headers", async () => {
    h = await startHarness(CONFIG, { timeouts: { requestTimeoutMs: 600, headersTimeoutMs: 300, checkIntervalMs: 100 } });
    const { hostname, port } = new URL(h.url);
    const slow = (head: string, drip: string) =>
      new Promise<string>((resolve) => {
        const socket = connect(Number(port), hostname);
        let got = "";
        socket.on("data", (c) => (got += c));
        socket.on("close", () => {
          clearInterval(timer);
          resolve(got);
        });
        socket.on("error", () => undefined);
        socket.write(head);
        const timer = setInterval(() => socket.writable && socket.write(drip), 100);
      });
    const body = await slow(`POST /threads HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{`, " ");
    expect(body).toMatch(/^HTTP\/1\.1 408/);
    const headers = await slow("GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n", "X-Slow: 1\r\n");
    expect(headers).toMatch(/^HTTP\/1\.1 408/);
    expect((await fetch(`${h.url}/health`)).status).toBe(200);
  });

  it("limits body size per route: 1 MiB for threads and agents, 8 MiB for runs", async () => {
    h = await startHarness(CONFIG);
    const big = JSON.stringify({ metadata: { note: "x".repeat(1024 * 1024) } });
    expect((await postJson(`${h.url}/threads`, JSON.parse(big))).status).toBe(413);
    const run = await postJson(`${h.url}/runs/wait`, { input: { messages: [{ role: "user", content: "y".repeat(2 * 1024 * 1024) }] } });
    expect(run.status).toBe(200);
    const tooBig = await postJson(`${h.url}/runs/wait`, { input: { messages: [{ role: "user", content: "y".repeat(3 * 1024 * 1024) }, { role: "user", content: "y".repeat(3 * 1024 * 1024) }, { role: "user", content: "y".repeat(3 * 1024 * 1024) }] } });
    expect(tooBig.status).toBe(413);
  });
});

describe("agent text limits", () => {
  it("refuses oversized souls and descriptions (422 naming the field); the list carries souls unless include_soul=false", async () => {
    h = await startHarness(CONFIG);
    const soul = await postJson(`${h.url}/api/agents`, { name: "big", soul: "s".repeat(64 * 1024 + 1) });
    expect(soul.status).toBe(422);
    expect(JSON.stringify((await soul.json()).detail)).toContain('"soul"');
    const description = await postJson(`${h.url}/api/agents`, { name: "big", description: "d".repeat(1025) });
    expect(description.status).toBe(422);
    expect((await postJson(`${h.url}/api/agents`, { name: "big", soul: "s".repeat(64 * 1024) })).status).toBe(201);
    const put = await fetch(`${h.url}/api/agents/big`, { method: "PUT", headers: { "content-type": "application/json" }, body: JSON.stringify({ soul: "t".repeat(64 * 1024 + 1) }) });
    expect(put.status).toBe(422);
    const profile = await fetch(`${h.url}/api/user-profile`, { method: "PUT", headers: { "content-type": "application/json" }, body: JSON.stringify({ content: "p".repeat(64 * 1024 + 1) }) });
    expect(profile.status).toBe(422);
    // As upstream, the agents list carries each soul; `include_soul=false` leaves them out for a light listing.
    expect((await (await fetch(`${h.url}/api/agents`)).text()).length).toBeGreaterThan(64 * 1024);
    expect((await (await fetch(`${h.url}/api/agents?include_soul=false`)).text()).length).toBeLessThan(1024);
  });
});
