// The programs the suite needs from the machine (PostgreSQL's server binaries, redis-server and redis-cli, bwrap),
// found the way scripts/services.sh finds them, and what to do when some are missing: install them with apt-get
// when this process may (root, apt-get on PATH), else stop the run with the one command that installs them.
// vitest.global-setup.ts runs this before starting the services, so `npm ci && npm test` works on a fresh Debian.
import { execFileSync } from "node:child_process";
import { accessSync, constants, readdirSync } from "node:fs";
import path from "node:path";

/** One program the suite needs, with the Debian package that ships it. */
export interface ServiceTool {
  /** What the log line names: `postgresql`, `redis-server`, `bubblewrap` (the Debian package names). */
  pkg: string;
  /** Absolute path of the program (for PostgreSQL its bin directory), or null when missing. */
  found: string | null;
}

/** What global setup does about the tools. */
export type ProvisionPlan =
  | { kind: "ready" }
  | { kind: "install"; packages: string[]; command: string[]; log: string }
  | { kind: "fail"; message: string };

/** The environment variables the lookup reads; tests pass their own to stand for a machine without the tools. */
export type LookupEnv = Partial<Record<"PATH" | "DEERFLOW_PG_BIN" | "DEERFLOW_PG_ROOT", string>>;

/** The first executable `name` on `PATH` (colon-separated), or null. */
export function onPath(name: string, pathVar: string | undefined): string | null {
  for (const dir of (pathVar ?? "").split(":")) {
    if (!dir) continue;
    const file = path.join(dir, name);
    try {
      accessSync(file, constants.X_OK);
      return file;
    } catch {
      // not here: try the next directory
    }
  }
  return null;
}

/**
 * PostgreSQL's bin directory as scripts/services.sh picks it: DEERFLOW_PG_BIN when set, else the newest
 * `<DEERFLOW_PG_ROOT or /usr/lib/postgresql>/<version>/bin` holding `pg_ctl`; null when none has it.
 */
export function findPgBin(env: LookupEnv): string | null {
  const has = (dir: string) => onPath("pg_ctl", dir) !== null && onPath("initdb", dir) !== null;
  if (env.DEERFLOW_PG_BIN) return has(env.DEERFLOW_PG_BIN) ? env.DEERFLOW_PG_BIN : null;
  const root = env.DEERFLOW_PG_ROOT ?? "/usr/lib/postgresql";
  let versions: string[];
  try {
    versions = readdirSync(root);
  } catch {
    return null;
  }
  const sorted = versions.sort((a, b) => a.localeCompare(b, "en", { numeric: true })).reverse();
  for (const v of sorted) if (has(path.join(root, v, "bin"))) return path.join(root, v, "bin");
  return null;
}

/**
 * The tools the run needs. `services`: false when PostgreSQL and Redis are given as URLs (CI, a developer's
 * `npm run services`), so only bubblewrap is looked for.
 */
export function findServiceTools(env: LookupEnv, services = true): ServiceTool[] {
  // services.sh uses redis-cli for its readiness check: redis-server alone is not enough.
  const redis = onPath("redis-cli", env.PATH) ? onPath("redis-server", env.PATH) : null;
  return [
    ...(services ? [{ pkg: "postgresql", found: findPgBin(env) }, { pkg: "redis-server", found: redis }] : []),
    // The host-bash isolation tests run inside it (src/sandbox/bubblewrap.ts); they are the reason it is needed.
    { pkg: "bubblewrap", found: onPath("bwrap", env.PATH) },
  ];
}

/**
 * Decides what to do about `tools`: nothing when all are found; an apt-get install of the missing packages when
 * this process is root and apt-get is on PATH; otherwise a failure whose one line is the command to run.
 * @param can.root Whether this process runs as root. @param can.aptGet apt-get's path, or null.
 */
export function planProvision(tools: ServiceTool[], can: { root: boolean; aptGet: string | null }): ProvisionPlan {
  const missing = tools.filter((t) => t.found === null).map((t) => t.pkg);
  if (missing.length === 0) return { kind: "ready" };
  const install = ["install", "-y", "-qq", "--no-install-recommends", ...missing];
  if (can.root && can.aptGet) {
    return { kind: "install", packages: missing, command: [can.aptGet, ...install], log: `test setup: ${missing.join(", ")} missing on this machine: installing with apt-get` };
  }
  return {
    kind: "fail",
    message: `test setup: ${missing.join(", ")} missing on this machine; install them first: ${can.root ? "" : "sudo "}apt-get update && ${can.root ? "" : "sudo "}apt-get ${install.join(" ")}`,
  };
}

/**
 * Finds the tools and carries out the plan: installs the missing ones with apt-get (one log line, apt's own
 * output only when it fails), then looks again. @throws Error with the plan's one line when the tools are
 * missing and cannot be installed here, or still missing after the install.
 */
export function ensureServiceTools(
  env: LookupEnv,
  options: { services?: boolean; root?: boolean; log?: (line: string) => void; run?: (file: string, args: string[]) => void } = {},
): void {
  const services = options.services ?? true;
  const root = options.root ?? process.getuid?.() === 0;
  const log = options.log ?? ((line: string) => console.error(line));
  const run = options.run ?? ((file: string, args: string[]) => void execFileSync(file, args, { stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, PATH: env.PATH, DEBIAN_FRONTEND: "noninteractive" } }));
  const plan = planProvision(findServiceTools(env, services), { root, aptGet: onPath("apt-get", env.PATH) });
  if (plan.kind === "ready") return;
  if (plan.kind === "fail") throw new Error(plan.message);
  log(plan.log);
  const [aptGet, ...args] = plan.command;
  try {
    run(aptGet!, ["update", "-qq"]);
    run(aptGet!, args);
  } catch (err) {
    const stderr = String((err as { stderr?: unknown }).stderr ?? "").trim().split("\n").slice(-5).join("\n");
    throw new Error(`test setup: apt-get install ${plan.packages.join(" ")} failed${stderr ? `:\n${stderr}` : ""}`);
  }
  const still = findServiceTools(env, services).filter((t) => t.found === null);
  if (still.length) throw new Error(`test setup: ${still.map((t) => t.pkg).join(", ")} still missing after apt-get install`);
}
