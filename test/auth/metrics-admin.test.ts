// /metrics describes every user's traffic: only an admin (e.g. the scraper's admin API key) may read it.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { signUp } from "../support/auth-client.js";
import { startHarness, type Harness } from "../support/harness.js";

const CONFIG = "models:\n  - name: s\n    use: deerflow-gateway:ScriptedChatModel\n    model: s\n";
const PASSWORD = "a-long-passphrase-42";
let h: Harness;
beforeAll(async () => {
  h = await startHarness(CONFIG, { authDisabled: false });
});
afterAll(() => h.close());

describe("GET /metrics with sign-in on", () => {
  it("answers 401 without credentials, 403 to a plain user and the metrics to an admin", async () => {
    expect((await fetch(`${h.url}/metrics`)).status).toBe(401);
    const admin = await signUp(h.url, "admin@example.com", PASSWORD, "initialize");
    const user = await signUp(h.url, "user@example.com", PASSWORD, "register");
    const denied = await user.fetch("/metrics");
    expect(denied.status).toBe(403);
    expect((await denied.json()).detail).toContain("Admin");
    const ok = await admin.fetch("/metrics");
    expect(ok.status).toBe(200);
    expect(await ok.text()).toContain("deerflow_");
  });
});
