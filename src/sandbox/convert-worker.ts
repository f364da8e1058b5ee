// Worker-thread entry for large document conversions (DeerFlow converts files over 1 MB with asyncio.to_thread):
// parsing a big PDF or DOCX takes seconds of CPU, which must not stall the gateway's event loop.
import { parentPort, workerData } from "node:worker_threads";
import { convertToMarkdown, type ConversionLimits } from "./convert-document.js";

const { file, limits, ext } = workerData as { file: string; limits: ConversionLimits; ext?: string };
convertToMarkdown(file, limits, ext).then(
  (markdown) => parentPort!.postMessage({ markdown }),
  (err: unknown) => parentPort!.postMessage({ error: err instanceof Error ? err.message : String(err), conversion: (err as Error)?.name === "ConversionError" }),
);
