import { transform } from "esbuild";
import { defineConfig } from "vitest/config";

// Vite 8 transforms TypeScript with Oxc, which only lowers legacy decorators; Node 20 cannot parse
// TC39 decorators (`@Next(...)`), so TypeScript goes through esbuild instead
// (notes/dependencies.md section 3).
export default defineConfig({
  oxc: false,
  plugins: [
    {
      name: "esbuild-ts (TC39 decorators)",
      enforce: "pre",
      async transform(code, id) {
        const file = id.split("?")[0];
        if (!/\.[cm]?tsx?$/.test(file) || file.includes("/node_modules/")) return null;
        const r = await transform(code, { sourcefile: file, loader: "ts", target: "es2022", format: "esm", sourcemap: "external" });
        return { code: r.code, map: r.map };
      },
    },
  ],
  test: {
    include: ["test/**/*.test.ts"],
    globalSetup: ["./vitest.global-setup.ts"],
    // The server process's speed patches (src/perf/patches.ts), so the suite runs what it runs.
    setupFiles: ["./test/support/perf-patches.ts"],
    pool: "forks",
    testTimeout: 20_000,
    // As the server runs them (src/config/process-env-defaults.ts applyCallbackEnvDefault): handlers inline.
    env: { LANGCHAIN_CALLBACKS_BACKGROUND: "false" },
    hookTimeout: 30_000,
  },
});
