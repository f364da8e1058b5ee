// The fence around the speed patches (src/perf/patches.ts): each installs under the version it is pinned to, stands
// down (changing nothing) under any other, and can be switched off; an upgrade that makes one stand down fails here.
import { CallbackManager } from "@langchain/core/callbacks/manager";
import { AsyncLocalStorageProviderSingleton } from "@langchain/core/singletons";
import { afterEach, describe, expect, it } from "vitest";
import { installedVersion, installPerfPatches, PERF_PATCH_NAMES, PERF_PATCHES, perfPatchesOn, uninstallPerfPatches } from "../../src/perf/patches.js";

const copyOf = () => CallbackManager.prototype.copy;
const scopeOf = () => (AsyncLocalStorageProviderSingleton as unknown as { runWithConfig: unknown }).runWithConfig;

// Each case may uninstall: the file leaves the server's patches in place, as the test setup made them.
afterEach(() => void installPerfPatches());

describe("speed patches", () => {
  it("are pinned to the installed versions and all install there (an upgrade makes this fail: re-measure, re-pin)", () => {
    for (const patch of PERF_PATCHES) expect(`${patch.name}: ${installedVersion(patch.package)}`).toBe(`${patch.name}: ${patch.version}`);
    uninstallPerfPatches();
    const report = installPerfPatches();
    expect(report).toEqual(Object.fromEntries(PERF_PATCH_NAMES.map((name) => [name, "on"])));
    expect(perfPatchesOn()).toEqual([...PERF_PATCH_NAMES]);
  });

  it("put the library's own code back when uninstalled, and replace it when installed", () => {
    uninstallPerfPatches();
    const copy = copyOf();
    const scope = scopeOf();
    installPerfPatches();
    expect(copyOf()).not.toBe(copy);
    expect(scopeOf()).not.toBe(scope);
    uninstallPerfPatches();
    expect(copyOf()).toBe(copy);
    expect(scopeOf()).toBe(scope);
  });

  it("stand down under any other version of their package, changing nothing", () => {
    uninstallPerfPatches();
    const copy = copyOf();
    const scope = scopeOf();
    const report = installPerfPatches(undefined, (pkg) => (pkg === "@langchain/core" ? "1.4.1" : pkg === "langchain" ? null : "2.0.0"));
    expect(report["callback-copy"]).toBe("stood down: @langchain/core 1.4.1 is not 1.4.0");
    expect(report["runnable-scope"]).toBe("stood down: @langchain/core 1.4.1 is not 1.4.0");
    expect(report["pregel-stream"]).toBe("stood down: @langchain/langgraph 2.0.0 is not 1.7.3");
    expect(report["model-call-chain"]).toBe("stood down: langchain unreadable is not 1.5.14");
    expect(perfPatchesOn()).toEqual([]);
    expect(copyOf()).toBe(copy);
    expect(scopeOf()).toBe(scope);
  });

  it("install only the ones switched on", () => {
    uninstallPerfPatches();
    const copy = copyOf();
    expect(installPerfPatches(new Set())).toEqual(Object.fromEntries(PERF_PATCH_NAMES.map((name) => [name, "off"])));
    expect(copyOf()).toBe(copy);
    const report = installPerfPatches(new Set(["runnable-scope", "pregel-stream"]));
    expect(report).toEqual({ "callback-copy": "off", "runnable-scope": "on", "pregel-stream": "on", "model-call-chain": "off" });
    expect(copyOf()).toBe(copy);
    expect(perfPatchesOn()).toEqual(["runnable-scope", "pregel-stream"]);
  });
});
