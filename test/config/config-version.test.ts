import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { loadAppConfig } from "../../src/config/app-config.js";
import { captureLogs } from "../support/capture-logs.js";

// An older config_version than config.example.yaml's is a warning, never a failure.
const MODEL = "models:\n  - {name: m1, use: langchain_openai:ChatOpenAI, model: gpt-test}\n";
let dir: string;
let logs: ReturnType<typeof captureLogs>;
beforeEach(() => {
  dir = mkdtempSync(path.join(tmpdir(), "cfgver-"));
  logs = captureLogs();
});
afterEach(() => {
  logs.restore();
  rmSync(dir, { recursive: true, force: true });
});

/** Loads `config.yaml` with `version` (YAML text, or null for none) beside an example of `example`. */
function load(version: string | null, example: number | null, configDir = dir): string[] {
  if (example !== null) writeFileSync(path.join(dir, "config.example.yaml"), `config_version: ${example}\n${MODEL}`);
  const file = path.join(configDir, "config.yaml");
  writeFileSync(file, `${version === null ? "" : `config_version: ${version}\n`}${MODEL}`);
  expect(loadAppConfig(file).models[0].name).toBe("m1");
  return logs.messages().filter((m) => m.includes("outdated"));
}

describe("config version warning (CF-014)", () => {
  it("warns when the file has no version and the example has one", () => {
    const [warning] = load(null, 1);
    expect(warning).toContain("version 0");
    expect(warning).toContain("latest version is 1");
  });

  it("warns for an older version, and is silent for the same or a newer one", () => {
    expect(load("1", 2)[0]).toMatch(/version 1\).*latest version is 2/);
    logs.lines().length = 0;
    expect(load("1", 1)).toEqual([]);
    expect(load("3", 2)).toEqual([]);
  });

  it("loads a string or non-numeric version without failing", () => {
    expect(load('"1"', 2)[0]).toContain("version 1)");
    logs.lines().length = 0;
    expect(load("latest", 2)[0]).toContain("version 0)");
  });

  it("finds the example in a parent directory and is silent without one", () => {
    const nested = path.join(dir, "a", "b");
    mkdirSync(nested, { recursive: true });
    expect(load("1", 2, nested)).toHaveLength(1);
    rmSync(path.join(dir, "config.example.yaml"));
    logs.lines().length = 0;
    expect(load("1", null, nested)).toEqual([]);
  });
});
