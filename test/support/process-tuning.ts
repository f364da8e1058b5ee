// Vitest setup file: every test process runs with the server process's speed-only patches, as `npm start` does.
import { tuneServerProcess } from "../../src/runtime/process-tuning.js";

tuneServerProcess();
