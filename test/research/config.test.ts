// Issue 44: DeerFlow's config.example.yaml binds its three research tools unchanged; a community tool the gateway
// does not offer stops the start naming it; the shipped config lists the tools, and offline they answer a clear
// error within their timeout while the run goes on.
import { readFileSync } from "node:fs";
import { createServer } from "node:net";
import { describe, expect, it } from "vitest";
import { parseAppConfigText } from "../../src/config/app-config.js";
import { resolveUse } from "../../src/models/resolve-use.js";
import { loadConfigTools } from "../../src/tools/get-available-tools.js";
import { startHarness } from "../support/harness.js";
import { callTool, researchConfig } from "./support.js";

const UPSTREAM = readFileSync(new URL("../fixtures/deerflow/config.example.yaml", import.meta.url), "utf8");

describe("DeerFlow's config.example.yaml, unchanged", () => {
  it("binds web_search, web_fetch and image_search from its deerflow.community paths", async () => {
    const config = parseAppConfigText(UPSTREAM, "config.example.yaml", {});
    const web = config.tools.filter((t) => t.group === "web");
    expect(web.map((t) => t.use)).toEqual([
      "deerflow.community.ddg_search.tools:web_search_tool",
      "deerflow.community.jina_ai.tools:web_fetch_tool",
      "deerflow.community.image_search.tools:image_search_tool",
    ]);
    const tools = await loadConfigTools(config, ["web"]);
    expect(tools.map((t) => t.name)).toEqual(["web_search", "web_fetch", "image_search"]);
  });
});

describe("unsupported DeerFlow tools stop the start", () => {
  for (const use of ["deerflow.community.groundroute.tools:web_search_tool", "deerflow.community.fastcrw.tools:web_fetch_tool", "deerflow.community.browser_automation.tools:browser_navigate_tool"]) {
    it(`refuses ${use}, naming it`, () => {
      const yaml = researchConfig(`  - name: t\n    group: web\n    use: ${use}`);
      expect(() => parseAppConfigText(yaml, "config.yaml", {})).toThrow(`tools: '${use}' is a DeerFlow tool that deerflow-gateway does not offer`);
    });
  }

  it("no longer suggests `npm install <python path>` for an unresolvable DeerFlow path", async () => {
    const err = (await resolveUse("deerflow.tools.custom.tools:my_tool").catch((e: Error) => e)) as Error;
    expect(err.message).toContain("looks like a DeerFlow Python module path");
    expect(err.message).not.toContain("npm install");
  });
});

/** A port nothing listens on (bound, then released). */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const { port } = server.address() as { port: number };
  await new Promise<void>((r) => server.close(() => r()));
  return port;
}

describe("the shipped config, offline", () => {
  it("lists DuckDuckGo web_search, image_search and a web_fetch in group web", () => {
    const config = parseAppConfigText(readFileSync(new URL("../../config/config.yaml", import.meta.url), "utf8"), "config.yaml", new Proxy({}, { get: () => "set" }));
    const web = Object.fromEntries(config.tools.filter((t) => t.group === "web").map((t) => [t.name, t.use]));
    expect(web).toEqual({
      web_search: "deerflow.community.ddg_search.tools:web_search_tool",
      web_fetch: "deerflow-gateway/web:web_fetch_tool",
      image_search: "deerflow.community.image_search.tools:image_search_tool",
    });
    expect(config.tool_groups.map((g) => g.name)).toContain("web");
  });

  it("answers a clear error within the timeout when the provider cannot be reached, and the run continues", async () => {
    const port = await closedPort();
    const h = await startHarness(
      researchConfig(
        [
          `  - name: web_search\n    group: web\n    use: deerflow.community.ddg_search.tools:web_search_tool\n    base_url: http://127.0.0.1:${port}\n    timeout: 2`,
          `  - name: image_search\n    group: web\n    use: deerflow.community.image_search.tools:image_search_tool\n    base_url: http://127.0.0.1:${port}\n    timeout: 2`,
          `  - name: web_fetch\n    group: web\n    use: deerflow-gateway/web:web_fetch_tool\n    timeout: 2`,
        ].join("\n"),
      ),
    );
    try {
      for (const [tool, args, expected] of [
        ["web_search", { query: "deer" }, /^Error: duckduckgo: network error \(ECONNREFUSED\)$/],
        ["image_search", { query: "deer" }, /^Error: duckduckgo: network error \(ECONNREFUSED\)$/],
        ["web_fetch", { url: "https://no-such-host.invalid/page" }, /^Error: direct: the host no-such-host\.invalid could not be resolved$/],
      ] as const) {
        const started = Date.now();
        const { result, final } = await callTool(h, tool, args);
        expect(result).toMatch(expected);
        expect(Date.now() - started).toBeLessThan(6000);
        expect(final).not.toBe(result);
      }
    } finally {
      await h.close();
    }
  });
});

describe("web_capture without a capture provider", () => {
  it("answers a clear error naming the missing provider, and the run continues", async () => {
    const h = await startHarness(researchConfig("  - name: web_capture\n    group: web\n    use: deerflow-gateway/web:web_capture_tool"));
    try {
      const { result, final } = await callTool(h, "web_capture", { url: "https://example.com/" });
      expect(result).toBe("Error: web_capture: no web_capture provider is available for use: 'deerflow-gateway/web:web_capture_tool'");
      expect(final).not.toBe(result);
    } finally {
      await h.close();
    }
  });
});
