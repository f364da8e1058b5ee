// `node --import ./test/support/module-recorder.mjs`: appends the URL of every module the process loads (ESM and
// CommonJS) to the file named by DFGW_MODULE_LOG, so a test can see which packages a server loaded.
import { appendFileSync } from "node:fs";
import Module, { register } from "node:module";

const log = process.env.DFGW_MODULE_LOG;
if (log) {
  register(new URL("./module-recorder-hooks.mjs", import.meta.url));
  const compile = Module.prototype._compile;
  Module.prototype._compile = function (content, filename) {
    appendFileSync(log, `file://${filename}\n`);
    return compile.call(this, content, filename);
  };
}
