// The scale-out tests' common setup: a fresh PostgreSQL database and Redis key prefix, config.yaml written with the
// shared sections, N real gateway processes started on it, and all of it stopped and removed after the file.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll } from "vitest";
import { freePort, PROCESS_HOOK_MS, startGateway, type GatewayProcess } from "./gateway-process.js";
import { createTestDatabase, sharedSections, testPrefix } from "./services.js";

/** Options of {@link useGatewayCluster}. */
export interface GatewayClusterOptions {
  /** Gateway processes to start (default 2). */
  processes?: number;
  /** Each process gets its own DEER_FLOW_HOME and agents dir (`home-<i>`, `agents-<i>`), as on separate hosts; default one shared. */
  separateHomes?: boolean;
  /** Start the processes at once (a race on start is the test) instead of one after the other (default false: cold starts at once outrun the start bound on a loaded machine). */
  startTogether?: boolean;
  /** Extra environment of every process (e.g. `DEER_FLOW_AUTH_DISABLED: ""` to turn auth on). */
  env?: Record<string, string>;
  /** Runs before the processes start, with the cluster's temp dir (seed files into a home). */
  prepare?: (cluster: GatewayCluster) => void | Promise<void>;
}

/** What {@link useGatewayCluster} gives; filled in by its beforeAll. */
export interface GatewayCluster {
  /** The running processes, in start order. */
  gateways: GatewayProcess[];
  /** The temp dir holding config.yaml and the homes. */
  dir: string;
  /** The test database's URL. */
  dbUrl: string;
  /** DEER_FLOW_HOME of process `i` (the shared one without `separateHomes`). */
  home(i: number): string;
}

/**
 * Registers beforeAll/afterAll hooks that start a cluster: `config` (YAML without the `database` and
 * `stream_bridge` sections, which are appended; a function is called in beforeAll, after fakes it names exist) on a
 * fresh database and key prefix, `processes` gateways on it. afterAll SIGKILLs them, drops the database and
 * removes the dir.
 */
export function useGatewayCluster(config: string | (() => string), options: GatewayClusterOptions = {}): GatewayCluster {
  const count = options.processes ?? 2;
  let db: Awaited<ReturnType<typeof createTestDatabase>> | undefined;
  const cluster: GatewayCluster = {
    gateways: [],
    dir: "",
    dbUrl: "",
    home: (i) => path.join(cluster.dir, options.separateHomes ? `home-${i}` : "home"),
  };
  beforeAll(async () => {
    db = await createTestDatabase();
    cluster.dbUrl = db.url;
    cluster.dir = mkdtempSync(path.join(tmpdir(), "dfgw-cluster-"));
    const file = path.join(cluster.dir, "config.yaml");
    writeFileSync(file, `${typeof config === "function" ? config() : config}\n${sharedSections(db.url, testPrefix())}`);
    await options.prepare?.(cluster);
    const env = (i: number) => ({ DEER_FLOW_CONFIG_PATH: file, DEER_FLOW_HOME: cluster.home(i), DEER_FLOW_AGENTS_DIR: path.join(cluster.dir, options.separateHomes ? `agents-${i}` : "agents"), ...options.env });
    const start = async (i: number) => startGateway(await freePort(), env(i));
    if (options.startTogether) cluster.gateways.push(...(await Promise.all(Array.from({ length: count }, (_, i) => start(i)))));
    else for (let i = 0; i < count; i++) cluster.gateways.push(await start(i));
  }, PROCESS_HOOK_MS * count);
  afterAll(async () => {
    await Promise.all(cluster.gateways.map((g) => g.stop("SIGKILL")));
    await db?.drop();
    if (cluster.dir) rmSync(cluster.dir, { recursive: true, force: true });
  });
  return cluster;
}
