import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { agentDir, loadAgentConfig, loadAgentSoul, validateAgentName } from "../../src/config/agent-config.js";
import { ConfigError, NotFoundError, ValidationError } from "../../src/errors.js";

let agents: string;
beforeEach(() => {
  agents = mkdtempSync(path.join(tmpdir(), "agents-"));
});
afterEach(() => rmSync(agents, { recursive: true, force: true }));

function put(rel: string, text: string) {
  const f = path.join(agents, rel);
  mkdirSync(path.dirname(f), { recursive: true });
  writeFileSync(f, text);
}

describe("validateAgentName (config.md §9.2)", () => {
  it("accepts letters, digits and hyphens and returns the name lowercased", () => {
    expect(validateAgentName("Code-Reviewer-2")).toBe("code-reviewer-2");
    expect(validateAgentName("-a--b-")).toBe("-a--b-");
  });

  it.each(["Bad_Name", "../../../tmp/evil", "", "abc\n", "a b", "a.b"])("rejects %j naming the pattern", (name) => {
    expect(() => validateAgentName(name)).toThrow(ValidationError);
    expect(() => validateAgentName(name)).toThrow("^[A-Za-z0-9-]+$");
    expect(() => validateAgentName(name)).toThrow("Invalid agent name");
  });
});

describe("agentDir (decision 1 layout)", () => {
  it("is <agents>/<user>/<lowercased name>", () => {
    expect(agentDir("CodeReviewer", "alice", agents)).toBe(path.join(agents, "alice", "codereviewer"));
    expect(agentDir("x", undefined, agents)).toBe(path.join(agents, "default", "x"));
  });

  it.each(["../escape", "foo/bar", ""])("rejects the user id %j", (user) => {
    expect(() => agentDir("x", user, agents)).toThrow("Invalid user id");
  });
});

describe("loadAgentConfig (CF-046, CF-047)", () => {
  it("loads the fields as written", () => {
    put("default/code-reviewer/config.yaml", "name: code-reviewer\ndescription: Code review agent\nmodel: deepseek-v3\n");
    const cfg = loadAgentConfig("code-reviewer", "default", agents);
    expect(cfg).toMatchObject({ name: "code-reviewer", description: "Code review agent", model: "deepseek-v3" });
  });

  it("infers the name from the directory and applies the defaults", () => {
    put("default/inferred-name/config.yaml", "description: My agent\n");
    expect(loadAgentConfig("inferred-name", "default", agents)).toEqual({
      name: "inferred-name",
      description: "My agent",
      model: null,
      tool_groups: null,
      skills: null,
      model_settings: null,
      thinking_enabled: null,
      reasoning_effort: null,
    });
  });

  it("treats an empty config.yaml as all defaults", () => {
    put("default/empty/config.yaml", "");
    expect(loadAgentConfig("empty", "default", agents)).toMatchObject({ name: "empty", description: "", model: null });
  });

  it("keeps tool_groups and distinguishes skills [] from skills null", () => {
    put("default/restricted/config.yaml", "tool_groups: [file:read, file:write]\nskills: []\n");
    put("default/default-skills/config.yaml", "description: x\n");
    const r = loadAgentConfig("restricted", "default", agents);
    expect(r.tool_groups).toEqual(["file:read", "file:write"]);
    expect(r.skills).toEqual([]);
    expect(loadAgentConfig("default-skills", "default", agents).skills).toBeNull();
  });

  it("looks the name up case-insensitively and per user", () => {
    put("alice/my-agent/config.yaml", "model: gpt-4\n");
    expect(loadAgentConfig("My-Agent", "alice", agents).model).toBe("gpt-4");
    expect(() => loadAgentConfig("my-agent", "bob", agents)).toThrow(NotFoundError);
  });

  it("fails with not found for a name never created and for a directory without config.yaml", () => {
    expect(() => loadAgentConfig("ghost", "default", agents)).toThrow(NotFoundError);
    expect(() => loadAgentConfig("ghost", "default", agents)).toThrow("Agent 'ghost' not found");
    put("default/broken-agent/SOUL.md", "soul only");
    expect(() => loadAgentConfig("broken-agent", "default", agents)).toThrow(NotFoundError);
  });

  it("fails with 'Failed to parse agent config' for invalid YAML", () => {
    put("default/bad-yaml/config.yaml", "model: [unclosed\n");
    expect(() => loadAgentConfig("bad-yaml", "default", agents)).toThrow(ConfigError);
    expect(() => loadAgentConfig("bad-yaml", "default", agents)).toThrow(/^Failed to parse agent config/);
  });

  it("fails with a ConfigError naming the key for a schema violation", () => {
    put("default/bad-schema/config.yaml", "tool_groups: web\n");
    expect(() => loadAgentConfig("bad-schema", "default", agents)).toThrow(/tool_groups/);
  });

  it("rejects an invalid name before touching the disk", () => {
    expect(() => loadAgentConfig("Bad_Name", "default", agents)).toThrow(ValidationError);
  });
});

describe("loadAgentSoul (CF-049, adapted to decision 1)", () => {
  it("returns the trimmed SOUL.md of a custom agent", () => {
    put("default/code-reviewer/config.yaml", "");
    put("default/code-reviewer/SOUL.md", "\n  You are a specialized code review expert.\n\n");
    expect(loadAgentSoul("code-reviewer", "default", agents)).toBe("You are a specialized code review expert.");
  });

  it("returns null when the agent has no SOUL.md or only whitespace", () => {
    put("default/no-soul/config.yaml", "");
    put("default/blank/SOUL.md", "  \n\t\n");
    expect(loadAgentSoul("no-soul", "default", agents)).toBeNull();
    expect(loadAgentSoul("blank", "default", agents)).toBeNull();
  });

  it("reads a soul-only directory without config.yaml", () => {
    put("default/soul-only/SOUL.md", "You are a brave agent.");
    expect(loadAgentSoul("soul-only", "default", agents)).toBe("You are a brave agent.");
  });

  it("never leaks another agent's or user's soul", () => {
    put("alice/foo/SOUL.md", "alice soul");
    put("default/foo/config.yaml", "");
    expect(loadAgentSoul("foo", "default", agents)).toBeNull();
  });

  it("uses the user's SOUL.md for the default agent, then the global agents/SOUL.md", () => {
    expect(loadAgentSoul(null, "default", agents)).toBeNull();
    put("SOUL.md", "  global soul  ");
    expect(loadAgentSoul(null, "default", agents)).toBe("global soul");
    put("default/SOUL.md", "user soul");
    expect(loadAgentSoul(null, "default", agents)).toBe("user soul");
    expect(loadAgentSoul(null, "bob", agents)).toBe("global soul");
    put("bob/SOUL.md", "   ");
    expect(loadAgentSoul(null, "bob", agents)).toBe("global soul");
  });
});
