// Loader hooks of module-recorder.mjs (they run on the loader thread).
import { appendFileSync } from "node:fs";

export async function load(url, context, next) {
  if (process.env.DFGW_MODULE_LOG) appendFileSync(process.env.DFGW_MODULE_LOG, `${url}\n`);
  return next(url, context);
}
