import { describe, expect, it } from "vitest";
import { parsePerfPatches, readServerEnv } from "../../src/config/server-env.js";
import { PERF_PATCH_NAMES } from "../../src/perf/state.js";

const sorted = (s: Set<string>) => [...s].sort();

describe("DEER_FLOW_PERF_PATCHES", () => {
  it("turns every patch on when unset, empty, on or all, and none when off or none", () => {
    for (const raw of [undefined, "", " on ", "ALL"]) expect(sorted(parsePerfPatches(raw))).toEqual([...PERF_PATCH_NAMES].sort());
    for (const raw of ["off", "None"]) expect(sorted(parsePerfPatches(raw))).toEqual([]);
    expect(sorted(readServerEnv({ DEER_FLOW_PERF_PATCHES: "off" }).perfPatches)).toEqual([]);
  });

  it("takes a list of patches to install, or of patches to leave out", () => {
    expect(sorted(parsePerfPatches("callback-copy, runnable-scope"))).toEqual(["callback-copy", "runnable-scope"]);
    expect(sorted(parsePerfPatches("-pregel-stream,-model-call-chain"))).toEqual(["callback-copy", "runnable-scope"]);
  });

  it("refuses an unknown name or a mixed list, naming the entry and the known patches", () => {
    expect(() => parsePerfPatches("random-pool")).toThrow("DEER_FLOW_PERF_PATCHES: unknown patch 'random-pool' (known: callback-copy, runnable-scope, pregel-stream, model-call-chain; or on, off)");
    expect(() => parsePerfPatches("callback-copy,-pregel-stream")).toThrow(/not both/);
  });
});
