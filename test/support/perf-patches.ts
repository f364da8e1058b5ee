// Vitest setup file: every test process runs with the server process's speed patches (src/perf/), as `npm start`
// does. Tests of the public paths switch one off around themselves (uninstallPerfPatch).
import { installPerfPatches } from "../../src/perf/patches.js";

installPerfPatches();
