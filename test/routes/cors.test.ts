import { afterEach, describe, expect, it } from "vitest";
import { corsOriginAllowed } from "../../src/app.js";
import { startHarness, type Harness } from "../support/harness.js";

const CONFIG = "models:\n  - name: s\n    use: deerflow-gateway:ScriptedChatModel\n    model: s\n";
let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const preflight = (url: string, origin: string) =>
  fetch(`${url}/api/agents`, { method: "OPTIONS", headers: { origin, "access-control-request-method": "POST", "access-control-request-headers": "content-type" } });

describe("CORS", () => {
  it("allows local front ends by default and refuses other origins", async () => {
    h = await startHarness(CONFIG);
    expect((await preflight(h.url, "http://localhost:3000")).headers.get("access-control-allow-origin")).toBe("http://localhost:3000");
    expect((await preflight(h.url, "http://evil.example")).headers.get("access-control-allow-origin")).toBeNull();
    const res = await fetch(`${h.url}/health`, { headers: { origin: "http://evil.example" } });
    expect(res.headers.get("access-control-allow-origin")).toBeNull();
  });

  it("allows exactly the configured origins, and exposes Content-Location to them", async () => {
    h = await startHarness(CONFIG, { corsOrigins: ["https://chat.example.com"] });
    expect((await preflight(h.url, "https://chat.example.com")).headers.get("access-control-allow-origin")).toBe("https://chat.example.com");
    expect((await preflight(h.url, "http://localhost:3000")).headers.get("access-control-allow-origin")).toBeNull();
    const res = await fetch(`${h.url}/health`, { headers: { origin: "https://chat.example.com" } });
    expect(res.headers.get("access-control-expose-headers")).toContain("Content-Location");
  });

  it("matches origins with or without a port, and * allows any", () => {
    expect(corsOriginAllowed("http://localhost:5173", ["http://localhost"])).toBe(true);
    expect(corsOriginAllowed("http://localhost.evil.example", ["http://localhost"])).toBe(false);
    expect(corsOriginAllowed("http://anything", ["*"])).toBe(true);
    expect(corsOriginAllowed(undefined, [])).toBe(true);
  });
});
