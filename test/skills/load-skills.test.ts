import { renameSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { ExtensionsConfigSchema } from "../../src/config/extensions-config.js";
import { filterSkills, loadSkills, skillContainerFile } from "../../src/skills/load-skills.js";
import { tempSkillsRoot, writeSkill } from "./skill-tree.js";

const ext = (skills: Record<string, { enabled: boolean }> = {}) => ExtensionsConfigSchema.parse({ mcpServers: {}, skills });
let roots: string[] = [];
const newRoot = () => {
  const r = tempSkillsRoot();
  roots.push(r);
  return r;
};
afterEach(() => {
  for (const r of roots) rmSync(r, { recursive: true, force: true });
  roots = [];
});

describe("skill discovery (CF-068)", () => {
  it("walks public/ and custom/, stops at package boundaries, skips dot-directories and lets custom override public", () => {
    const root = newRoot();
    writeSkill(root, "public/root-skill", "root-skill");
    writeSkill(root, "public/parent/child-skill", "child-skill");
    writeSkill(root, "custom/team/helper", "team-helper");
    writeSkill(root, "public/reviewer", "reviewer");
    writeSkill(root, "public/reviewer/evals/fixtures/injection", "injected");
    writeSkill(root, "public/reviewer/examples/helper", "example-helper");
    writeSkill(root, "public/visible/ok-skill", "ok-skill");
    writeSkill(root, "public/visible/.hidden/secret-skill", "secret-skill");
    writeSkill(root, "public/shared-skill", "shared-skill", "Public version");
    writeSkill(root, "custom/shared-skill", "shared-skill", "Custom version");
    const skills = loadSkills(root, ext());
    expect(skills.map((s) => s.name)).toEqual(["child-skill", "ok-skill", "reviewer", "root-skill", "shared-skill", "team-helper"]);
    const by = Object.fromEntries(skills.map((s) => [s.name, s]));
    expect(by["child-skill"].relativePath).toBe("parent/child-skill");
    expect(by["team-helper"].relativePath).toBe("team/helper");
    expect(skillContainerFile(by["root-skill"], "/mnt/skills")).toBe("/mnt/skills/public/root-skill/SKILL.md");
    expect(skillContainerFile(by["child-skill"], "/mnt/skills")).toBe("/mnt/skills/public/parent/child-skill/SKILL.md");
    expect(skillContainerFile(by["team-helper"], "/mnt/skills/")).toBe("/mnt/skills/custom/team/helper/SKILL.md");
    expect(by["shared-skill"]).toMatchObject({ category: "custom", description: "Custom version" });
  });

  it("gives no skills for a missing root", () => {
    expect(loadSkills(path.join(newRoot(), "nope"), ext())).toEqual([]);
  });

  it("sees an edited SKILL.md on the next load (parse cache keyed by mtime and size)", () => {
    const root = newRoot();
    const file = writeSkill(root, "public/a", "a", "first");
    expect(loadSkills(root, ext())[0].description).toBe("first");
    writeFileSync(file, "---\nname: a\ndescription: second version\n---\n");
    const later = new Date(Date.now() + 5000);
    utimesSync(file, later, later);
    expect(loadSkills(root, ext())[0].description).toBe("second version");
  });
});

describe("skill directory listings", () => {
  afterEach(() => vi.useRealTimers());

  it("reach the next load when a skill is added, removed or renamed, also once a listing is old enough to be reused", () => {
    const root = newRoot();
    writeSkill(root, "public/a", "a");
    const names = () => loadSkills(root, ext()).map((s) => s.name);
    // Fresh directories: their listings are read again on every load.
    expect(names()).toEqual(["a"]);
    writeSkill(root, "public/b", "b");
    expect(names()).toEqual(["a", "b"]);
    // A second later the listings are kept and reused while the directories are unchanged...
    vi.useFakeTimers({ toFake: ["Date"], now: Date.now() + 5_000 });
    expect(names()).toEqual(["a", "b"]);
    expect(names()).toEqual(["a", "b"]);
    // ...and every change of an entry is seen by the next load.
    writeSkill(root, "public/c", "c");
    expect(names()).toEqual(["a", "b", "c"]);
    rmSync(path.join(root, "public", "a"), { recursive: true });
    expect(names()).toEqual(["b", "c"]);
    renameSync(path.join(root, "public", "b"), path.join(root, "public", ".b-disabled"));
    expect(names()).toEqual(["c"]);
    writeSkill(root, "public/nested/d", "d");
    expect(names()).toEqual(["c", "d"]);
    rmSync(path.join(root, "public"), { recursive: true });
    expect(names()).toEqual([]);
  });
});

describe("enabled state and allowlists (CF-069, spec 2.7)", () => {
  it("takes the enabled state from the extensions config, enabled by default", () => {
    const root = newRoot();
    writeSkill(root, "public/alpha", "alpha");
    writeSkill(root, "public/beta", "beta");
    const skills = loadSkills(root, ext({ beta: { enabled: false } }));
    expect(skills.map((s) => [s.name, s.enabled])).toEqual([["alpha", true], ["beta", false]]);
    expect(filterSkills(skills, null).map((s) => s.name)).toEqual(["alpha"]);
    expect(loadSkills(root, ext({ beta: { enabled: true } })).every((s) => s.enabled)).toBe(true);
  });

  it("applies null = all enabled, [] = none, list = those (unknown names ignored)", () => {
    const root = newRoot();
    for (const n of ["a", "b", "c"]) writeSkill(root, `public/${n}`, n);
    const skills = loadSkills(root, ext({ c: { enabled: false } }));
    expect(filterSkills(skills, null).map((s) => s.name)).toEqual(["a", "b"]);
    expect(filterSkills(skills, new Set())).toEqual([]);
    expect(filterSkills(skills, new Set(["b", "c", "ghost"])).map((s) => s.name)).toEqual(["b"]);
  });
});
