// `npm run e2e:web`: the unmodified DeerFlow web app, built from ../shared/reference/frontend, driven in Debian's
// chromium against this gateway (offline scripted model, signed in; a second user signs in with SSO at an OpenID
// Connect provider running in this process) behind a proxy that routes like the app's nginx config. Fails on any response >= 400 the app did not expect and on any console error; screenshots go to
// a temp directory whose path is printed. Not part of `npm test` (the first run builds the app: minutes).
import { spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { cpSync, mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import puppeteer from "puppeteer-core";
import { freePort } from "../../test/support/gateway-process.js";
import type { FakeIdp } from "../../test/support/fakes/oidc-idp.js";
import { checkFrontendSource, ensureFrontendBuild, findChromium, FrontendSourceError, nextBin } from "./frontend.js";
import { portOf, startProxy } from "./proxy.js";
import { runScenario } from "./scenario.js";

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..");
/** Sign in with a real account (auth on, as shipped); `E2E_AUTH=0` runs with `DEER_FLOW_AUTH_DISABLED=1` instead. */
const WITH_AUTH = process.env.E2E_AUTH !== "0";
/** The first admin the run creates when auth is on. */
export const E2E_ACCOUNT = { email: "e2e-admin@example.com", password: "correct horse battery staple 42" };
const FRONTEND_SOURCE = process.env.DEER_FLOW_FRONTEND_DIR ?? path.resolve(REPO, "..", "shared", "reference", "frontend");

/** The SSO provider of the run: the IdP's client, and the second user it signs in. */
const SSO = { id: "corp", displayName: "Corp SSO", clientId: "deerflow-e2e", email: "member@example.com" };

/**
 * The gateway's config.yaml for the run. The scripted model says it supports thinking so the app offers Ultra mode
 * (subagents); the scheduler polls every second; `bash` runs in the bubblewrap sandbox (the agent packs a .skill).
 */
const gatewayConfig = (issuer: string | null) => `models:
  - name: scripted
    display_name: Scripted (offline)
    use: deerflow-gateway:ScriptedChatModel
    model: scripted
    token_delay_ms: 40
    supports_thinking: true
sandbox:
  use: deerflow-gateway/sandbox:AutoSandboxProvider
scheduler:
  enabled: true
  poll_interval_seconds: 1
${issuer ? `auth:
  oidc:
    enabled: true
    providers:
      ${SSO.id}:
        display_name: ${SSO.displayName}
        issuer: ${issuer}
        client_id: ${SSO.clientId}
        client_secret: $E2E_OIDC_CLIENT_SECRET
        allowed_email_domains: [example.com]
` : ""}tools:
  - { name: bash, group: bash, use: "deerflow.sandbox.tools:bash_tool" }
  - { name: ls, group: "file:read", use: "deerflow.sandbox.tools:ls_tool" }
  - { name: read_file, group: "file:read", use: "deerflow.sandbox.tools:read_file_tool" }
  - { name: write_file, group: "file:write", use: "deerflow.sandbox.tools:write_file_tool" }
  - { name: str_replace, group: "file:write", use: "deerflow.sandbox.tools:str_replace_tool" }
tool_groups:
  - name: bash
  - name: "file:read"
  - name: "file:write"
agents_api:
  enabled: true
checkpointer:
  type: sqlite
uploads:
  max_files: 10
  max_file_size: 1048576
  max_total_size: 5242880
`;

const children: ChildProcess[] = [];
/** Starts a long-running process, its output prefixed with `label`. */
function start(label: string, cmd: string, args: string[], cwd: string, env: NodeJS.ProcessEnv, quiet = false): ChildProcess {
  const child = spawn(cmd, args, { cwd, env, stdio: ["ignore", "pipe", "pipe"] });
  const out = (chunk: Buffer) => {
    if (!quiet || process.env.E2E_VERBOSE) process.stdout.write(chunk.toString().replace(/^/gm, `[${label}] `));
  };
  child.stdout!.on("data", out);
  child.stderr!.on("data", out);
  children.push(child);
  return child;
}

/** Polls `url` until it answers (any status below 500) or `timeoutMs` passes. */
async function waitFor(url: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      const res = await fetch(url);
      if (res.status < 500) return;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error(`${url} did not come up within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 300));
  }
}


async function main(): Promise<void> {
  const source = checkFrontendSource(FRONTEND_SOURCE, "set DEER_FLOW_FRONTEND_DIR=<path to deer-flow/frontend>");
  const chromium = findChromium();
  if (!chromium) throw new Error("chromium is not installed (Debian: apt-get install -y chromium)");
  const appDir = await ensureFrontendBuild(source);

  const work = mkdtempSync(path.join(tmpdir(), "dfgw-e2e-web-"));
  const shots = path.join(work, "screenshots");
  mkdirSync(shots);
  // With sign-in on, a second user signs in at this IdP (the gateway's client is registered once the public URL is known).
  // Loaded only here: oidc-provider warns about Node 20 on import, which would break the one-line missing-source message.
  const idp: FakeIdp | null = WITH_AUTH ? await (await import("../../test/support/fakes/oidc-idp.js")).startFakeIdp() : null;
  if (idp) idp.nextLogin = { sub: "e2e-second-user", email: SSO.email, email_verified: true, name: "Second User" };
  const oidcSecret = randomBytes(24).toString("hex");
  writeFileSync(path.join(work, "config.yaml"), gatewayConfig(idp?.issuer ?? null));
  // The skills are copied so enabling/disabling them in Settings writes only under the temp project.
  cpSync(path.join(REPO, "skills"), path.join(work, "skills"), { recursive: true });
  const gatewayPort = await freePort();
  const appPort = await freePort();
  const gatewayEnv = {
    ...process.env, HOST: "127.0.0.1", PORT: String(gatewayPort), LOG_LEVEL: "warn", DEER_FLOW_PROJECT_ROOT: work,
    DEER_FLOW_CONFIG_PATH: path.join(work, "config.yaml"), DEER_FLOW_HOME: path.join(work, ".deer-flow"),
    DEER_FLOW_AGENTS_DIR: path.join(work, "agents"), DEER_FLOW_SKILLS_DIR: path.join(work, "skills"),
    E2E_OIDC_CLIENT_SECRET: oidcSecret,
  };
  // Inherited from the caller or not, the mode is this run's choice.
  delete (gatewayEnv as NodeJS.ProcessEnv).DEER_FLOW_AUTH_DISABLED;
  if (!WITH_AUTH) (gatewayEnv as NodeJS.ProcessEnv).DEER_FLOW_AUTH_DISABLED = "1";
  start("gateway", process.execPath, ["--import", "tsx", path.join(REPO, "src", "server.ts")], REPO, gatewayEnv);
  start("app", nextBin(appDir), ["start", "-p", String(appPort), "-H", "127.0.0.1"], appDir, {
    ...process.env, NODE_ENV: "production", DEER_FLOW_AUTH_DISABLED: WITH_AUTH ? "" : "1", DEER_FLOW_INTERNAL_GATEWAY_BASE_URL: `http://127.0.0.1:${gatewayPort}`, NEXT_TELEMETRY_DISABLED: "1",
  }, true);
  await waitFor(`http://127.0.0.1:${gatewayPort}/health`, 60_000);
  await waitFor(`http://127.0.0.1:${appPort}/`, 120_000);
  if (WITH_AUTH) {
    // The first admin account (what the app's setup page would do); the browser then signs in on the login page.
    const res = await fetch(`http://127.0.0.1:${gatewayPort}/api/v1/auth/initialize`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(E2E_ACCOUNT) });
    if (res.status !== 201) throw new Error(`creating the first admin answered ${res.status}: ${await res.text()}`);
  }
  const proxy = await startProxy(gatewayPort, appPort);
  const baseUrl = `http://127.0.0.1:${portOf(proxy)}`;
  idp?.registerClient({ clientId: SSO.clientId, clientSecret: oidcSecret, redirectUris: [`${baseUrl}/api/v1/auth/callback/${SSO.id}`] });
  console.log(`[e2e] app ${baseUrl} (gateway :${gatewayPort}, next :${appPort}), work dir ${work}`);

  const browser = await puppeteer.launch({
    executablePath: chromium,
    headless: true,
    // A fresh profile, no background traffic: the machine's network is closed.
    userDataDir: path.join(work, "chromium-profile"),
    args: ["--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run", "--window-size=1440,900"],
    defaultViewport: { width: 1440, height: 900 },
  });
  let failed = false;
  try {
    const result = await runScenario(browser, baseUrl, shots, work, WITH_AUTH ? E2E_ACCOUNT : null, idp ? { displayName: SSO.displayName, email: SSO.email } : null);
    for (const s of result.screenshots) console.log(`[e2e] screenshot ${s}`);
    for (const step of result.steps) console.log(`[e2e] ${step.ok ? "ok  " : "FAIL"} ${step.name}${step.error ? `: ${step.error}` : ""}`);
    for (const p of result.problems) console.log(`[e2e] problem: ${p}`);
    failed = result.problems.length > 0 || result.steps.some((s) => !s.ok);
  } finally {
    await browser.close();
    proxy.close();
    await idp?.close();
    for (const c of children) c.kill("SIGTERM");
  }
  console.log(`[e2e] screenshots in ${shots}`);
  console.log(failed ? "[e2e] FAILED" : "[e2e] passed");
  process.exit(failed ? 1 : 0);
}

process.on("unhandledRejection", (err) => console.error(`[e2e] unhandled: ${(err as Error)?.message ?? err}`));

main().catch((err: Error) => {
  // A missing prerequisite is one line, not a stack.
  console.error(err instanceof FrontendSourceError ? `npm run e2e:web ${err.message}` : `[e2e] ${err.stack ?? err.message}`);
  for (const c of children) c.kill("SIGTERM");
  process.exit(1);
});
