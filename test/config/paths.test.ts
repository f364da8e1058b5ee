import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { getAgentsDir, getProjectRoot, getRuntimeHome, getSkillsDir, PACKAGE_ROOT, resolveConfigPath } from "../../src/config/paths.js";
import { ConfigError } from "../../src/errors.js";

let dir: string;
beforeEach(() => {
  dir = realpathSync(mkdtempSync(path.join(tmpdir(), "paths-")));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe("getProjectRoot (CF-001, CF-003)", () => {
  it("is the working directory when DEER_FLOW_PROJECT_ROOT is unset or blank", () => {
    expect(getProjectRoot({})).toBe(process.cwd());
    expect(getProjectRoot({ DEER_FLOW_PROJECT_ROOT: "  " })).toBe(process.cwd());
  });

  it("is DEER_FLOW_PROJECT_ROOT when it names a directory", () => {
    expect(getProjectRoot({ DEER_FLOW_PROJECT_ROOT: dir })).toBe(dir);
  });

  it("fails with 'does not exist' for a missing path", () => {
    expect(() => getProjectRoot({ DEER_FLOW_PROJECT_ROOT: path.join(dir, "missing") })).toThrow("does not exist");
  });

  it("fails with 'not a directory' for a regular file", () => {
    const f = path.join(dir, "file.txt");
    writeFileSync(f, "x");
    expect(() => getProjectRoot({ DEER_FLOW_PROJECT_ROOT: f })).toThrow("not a directory");
  });
});

describe("derived locations (CF-001)", () => {
  it("defaults runtime home, agents and skills directories under the project root", () => {
    const env = { DEER_FLOW_PROJECT_ROOT: dir };
    expect(getRuntimeHome(env)).toBe(path.join(dir, ".deer-flow"));
    expect(getAgentsDir(env)).toBe(path.join(dir, "agents"));
    expect(getSkillsDir(env)).toBe(path.join(dir, "skills"));
  });

  it("resolves DEER_FLOW_HOME against the working directory, and agents/skills dirs against the project root", () => {
    const env = { DEER_FLOW_PROJECT_ROOT: dir, DEER_FLOW_HOME: "rel-home", DEER_FLOW_AGENTS_DIR: "my-agents", DEER_FLOW_SKILLS_PATH: "team-skills" };
    expect(getRuntimeHome(env)).toBe(path.resolve(process.cwd(), "rel-home"));
    expect(getAgentsDir(env)).toBe(path.join(dir, "my-agents"));
    expect(getSkillsDir(env)).toBe(path.join(dir, "team-skills"));
  });
});

describe("resolveConfigPath (config.md §1.2)", () => {
  it("prefers an explicit path over DEER_FLOW_CONFIG_PATH and the project root", () => {
    const explicit = path.join(dir, "explicit.yaml");
    const fromEnv = path.join(dir, "env.yaml");
    writeFileSync(explicit, "");
    writeFileSync(fromEnv, "");
    writeFileSync(path.join(dir, "config.yaml"), "");
    const env = { DEER_FLOW_CONFIG_PATH: fromEnv, DEER_FLOW_PROJECT_ROOT: dir };
    expect(resolveConfigPath(explicit, env)).toBe(explicit);
    expect(resolveConfigPath(undefined, env)).toBe(fromEnv);
  });

  it("names the param when an explicit path is missing, and the variable when DEER_FLOW_CONFIG_PATH is missing (CF-004)", () => {
    const missing = path.join(dir, "does-not-exist.yaml");
    expect(() => resolveConfigPath(missing, {})).toThrow(/param `config_path`.*not found/);
    let err: unknown;
    try {
      resolveConfigPath(undefined, { DEER_FLOW_CONFIG_PATH: missing });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as ConfigError).code).toBe("config_not_found");
    expect((err as Error).message).toContain("DEER_FLOW_CONFIG_PATH");
    expect((err as Error).message).toContain(missing);
  });

  it("uses <root>/config.yaml before <root>/config/config.yaml", () => {
    mkdirSync(path.join(dir, "config"));
    writeFileSync(path.join(dir, "config", "config.yaml"), "");
    const env = { DEER_FLOW_PROJECT_ROOT: dir };
    expect(resolveConfigPath(undefined, env)).toBe(path.join(dir, "config", "config.yaml"));
    writeFileSync(path.join(dir, "config.yaml"), "");
    expect(resolveConfigPath(undefined, env)).toBe(path.join(dir, "config.yaml"));
  });

  it("ignores a directory named config.yaml in the project root", () => {
    mkdirSync(path.join(dir, "config.yaml"));
    mkdirSync(path.join(dir, "config"));
    writeFileSync(path.join(dir, "config", "config.yaml"), "");
    expect(resolveConfigPath(undefined, { DEER_FLOW_PROJECT_ROOT: dir })).toBe(path.join(dir, "config", "config.yaml"));
  });

  it("falls back to the package's shipped config/config.yaml when the project root has none", () => {
    expect(resolveConfigPath(undefined, { DEER_FLOW_PROJECT_ROOT: dir })).toBe(path.join(PACKAGE_ROOT, "config", "config.yaml"));
  });
});
