import { mkdtempSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { getAppConfig, resetAppConfig } from "../../src/config/app-config.js";
import { AppConfigSchema, STARTUP_ONLY_FIELDS } from "../../src/config/schema.js";
import { captureLogs } from "../support/capture-logs.js";

describe("the reload boundary registry", () => {
  it("registers exactly the schema fields whose description starts with 'startup-only:', each with a reason", () => {
    const described = Object.entries(AppConfigSchema.shape)
      .filter(([, schema]) => (schema as { description?: string }).description?.startsWith("startup-only:"))
      .map(([key]) => key)
      .sort();
    expect(described).toEqual(Object.keys(STARTUP_ONLY_FIELDS).sort());
    for (const [field, reason] of Object.entries(STARTUP_ONLY_FIELDS)) {
      expect(reason.length, field).toBeGreaterThan(10);
      expect((AppConfigSchema.shape as Record<string, { description?: string }>)[field].description).toBe(`startup-only: ${reason}`);
    }
  });

  it("includes the infrastructure sections: checkpointer, stream bridge, database", () => {
    expect(Object.keys(STARTUP_ONLY_FIELDS)).toEqual(expect.arrayContaining(["checkpointer", "stream_bridge", "database"]));
  });
});

describe("reloading a restart-only field", () => {
  let dir: string;
  let logs: ReturnType<typeof captureLogs>;
  beforeEach(() => {
    dir = mkdtempSync(path.join(tmpdir(), "dfgw-boundary-"));
    logs = captureLogs();
  });
  afterEach(() => {
    logs.restore();
    resetAppConfig();
    delete process.env.DEER_FLOW_CONFIG_PATH;
    rmSync(dir, { recursive: true, force: true });
  });

  it("logs a warning and keeps the running value, while hot fields change", () => {
    const file = path.join(dir, "config.yaml");
    process.env.DEER_FLOW_CONFIG_PATH = file;
    writeFileSync(file, "checkpointer:\n  type: sqlite\ntitle:\n  enabled: true\n");
    expect(getAppConfig().checkpointer?.type).toBe("sqlite");
    writeFileSync(file, "checkpointer:\n  type: memory\ntitle:\n  enabled: false\n");
    const later = new Date(Date.now() + 5000);
    utimesSync(file, later, later);
    const config = getAppConfig();
    expect(config.title.enabled).toBe(false);
    expect(config.checkpointer?.type).toBe("sqlite");
    const warning = logs.lines().find((l) => l.field === "checkpointer");
    expect(warning?.msg).toContain("needs a restart");
    expect(logs.messages()).toContain("config reloaded");
  });
});
