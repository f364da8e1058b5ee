// The sandbox tools, addressable from config.yaml as `use: deerflow-gateway/sandbox:<Export>` (and through
// DeerFlow's `deerflow.sandbox.tools:<name>_tool` paths, see USE_ALIASES in src/models/resolve-use.ts).
export { bashTool } from "./bash-tool.js";
export { lsTool, readFileTool, strReplaceTool, writeFileTool } from "./file-tools.js";
export { globTool, grepTool } from "./search-tools.js";
export { LocalSandboxProvider } from "../../sandbox/local-provider.js";
export { BubblewrapSandboxProvider } from "../../sandbox/bwrap-provider.js";
