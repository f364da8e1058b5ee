// THIRD_PARTY_PROVIDERS answers every third-party `use:` path of DeerFlow's own config.example.yaml (commented
// entries included) with a binding for the tool that entry is named after.
import { existsSync, readFileSync } from "node:fs";
import { resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { THIRD_PARTY_PROVIDERS } from "../../src/web/providers/third-party.js";

const UPSTREAM_EXAMPLE = resolve(import.meta.dirname, "../fixtures/deerflow/config.example.yaml");
const OURS = /^deerflow\.community\.(tavily|exa|firecrawl|brave|serper|searxng|infoquest|crawl4ai|browserless)[.:]/;

describe("THIRD_PARTY_PROVIDERS", () => {
  it("binds each path to the tool its name says (…:web_search_tool -> web_search)", () => {
    expect(Object.keys(THIRD_PARTY_PROVIDERS).length).toBeGreaterThanOrEqual(17);
    for (const [path, binding] of Object.entries(THIRD_PARTY_PROVIDERS)) {
      expect(path).toMatch(OURS);
      expect(`${binding.tool}_tool`).toBe(path.split(":")[1]);
    }
  });

  it.skipIf(!existsSync(UPSTREAM_EXAMPLE))("covers every third-party use: path of DeerFlow's config.example.yaml", () => {
    const text = readFileSync(UPSTREAM_EXAMPLE, "utf8");
    // `- name: X` then, a few lines on, `use: Y` (both may sit behind `# `)
    const entries = [...text.matchAll(/-\s+name:\s*(\w+)\s*\n(?:\s*#?\s*\w+:.*\n){0,3}?\s*#?\s*use:\s*(\S+)/g)].map((m) => ({ name: m[1]!, use: m[2]! }));
    const ours = entries.filter((e) => OURS.test(e.use));
    expect(ours.length).toBe(16); // all but Tavily web_fetch, which upstream defines without an example entry
    for (const e of ours) expect({ use: e.use, tool: THIRD_PARTY_PROVIDERS[e.use]?.tool }).toEqual({ use: e.use, tool: e.name });
  });
});
