// Port of DeerFlow sandbox/sandbox_provider.py get_sandbox_provider (resolve `sandbox.use`) for the providers this
// gateway offers; every other provider stops the start with a message naming it (never a silent fallback).
import type { AppConfig } from "../config/schema.js";
import { ConfigError } from "../errors.js";
import { AioSandboxProvider, type AioSandboxSettings } from "./aio-provider.js";
import type { LocalSandboxProvider } from "./local-provider.js";

/** `use:` values of the local provider (DeerFlow's two spellings and this package's). */
export const LOCAL_PROVIDER_USES: ReadonlySet<string> = new Set([
  "deerflow.sandbox.local:LocalSandboxProvider",
  "deerflow.sandbox.local.local_sandbox_provider:LocalSandboxProvider",
  "deerflow-gateway/sandbox:LocalSandboxProvider",
]);

/** `use:` values of DeerFlow's container sandbox (its two spellings and this package's). */
export const AIO_PROVIDER_USES: ReadonlySet<string> = new Set([
  "deerflow.community.aio_sandbox:AioSandboxProvider",
  "deerflow.community.aio_sandbox.aio_sandbox_provider:AioSandboxProvider",
  "deerflow-gateway/sandbox:AioSandboxProvider",
]);

/** `use:` of the bubblewrap provider (isolated; bash without opt-in). */
export const BUBBLEWRAP_PROVIDER_USES: ReadonlySet<string> = new Set(["deerflow-gateway/sandbox:BubblewrapSandboxProvider"]);
/** `use:` of the automatic choice: the bubblewrap provider where `bwrap` works, else the local one. */
export const AUTO_PROVIDER_USES: ReadonlySet<string> = new Set(["deerflow-gateway/sandbox:AutoSandboxProvider"]);

/** Upstream providers we know and do not offer, by module prefix, with what they are. */
const NOT_OFFERED: readonly [prefix: string, what: string][] = [
  ["deerflow.community.e2b_sandbox", "E2B cloud sandboxes (the e2b SDK and service)"],
  ["deerflow.community.boxlite", "BoxLite micro-VMs (the boxlite runtime and KVM)"],
  ["deerflow.community.tenki", "Tenki cloud microVMs (the tenki SDK and service)"],
];

const OFFERED =
  "Offered: deerflow.sandbox.local:LocalSandboxProvider (the thread's directories on this host; bash only with " +
  "sandbox.allow_host_bash), deerflow-gateway/sandbox:BubblewrapSandboxProvider (bash isolated in bubblewrap with " +
  "limits), deerflow-gateway/sandbox:AutoSandboxProvider (bubblewrap where it works, else local), and deerflow.community.aio_sandbox:AioSandboxProvider with sandbox.base_url (a running " +
  "sandbox service) or sandbox.provisioner_url (a provisioner that hands out one sandbox per thread).";

/** True when `sandbox.use` names DeerFlow's container sandbox. */
export function isAioProviderUse(use: string | undefined): boolean {
  return AIO_PROVIDER_USES.has(use ?? "");
}

/**
 * Stops the start for a `sandbox.use` this gateway does not offer: e2b, boxlite, tenki, aio_sandbox without
 * `base_url` / `provisioner_url` (upstream would start Docker containers itself), and anything unknown.
 * @throws ConfigError naming the provider and what is offered instead.
 */
export function assertSandboxUseOffered(sandbox: Pick<AppConfig["sandbox"], "use" | "base_url" | "provisioner_url">): void {
  const use = sandbox.use;
  if (LOCAL_PROVIDER_USES.has(use) || BUBBLEWRAP_PROVIDER_USES.has(use) || AUTO_PROVIDER_USES.has(use)) return;
  if (isAioProviderUse(use)) {
    if (sandbox.base_url || sandbox.provisioner_url) return;
    throw new ConfigError(
      `sandbox.use '${use}' without sandbox.base_url or sandbox.provisioner_url asks for DeerFlow's Docker-managed local ` +
        "container backend (the gateway starting sandbox containers itself), which this gateway does not offer. Run the " +
        "sandbox service yourself and set sandbox.base_url, or set sandbox.provisioner_url. " + OFFERED,
    );
  }
  const known = NOT_OFFERED.find(([prefix]) => use === prefix || use.startsWith(`${prefix}.`) || use.startsWith(`${prefix}:`));
  const what = known ? `${known[1]} is not offered by this gateway` : "is not a sandbox provider this gateway knows";
  throw new ConfigError(`sandbox.use '${use}': ${known ? what : `'${use}' ${what}`}. ${OFFERED}`);
}

/**
 * The AIO provider for a checked `sandbox` section (see {@link assertSandboxUseOffered}).
 * @param local The thread directories on this host. @param skillsVirtual The skills path agents may read.
 */
export function createAioProvider(sandbox: AppConfig["sandbox"], local: LocalSandboxProvider, skillsVirtual: string): AioSandboxProvider {
  const settings: AioSandboxSettings = {
    baseUrl: sandbox.base_url || undefined,
    apiKey: sandbox.api_key || undefined,
    provisionerUrl: sandbox.provisioner_url || undefined,
    provisionerApiKey: sandbox.provisioner_api_key || undefined,
    idleTimeoutSeconds: sandbox.idle_timeout,
    requestTimeoutSeconds: sandbox.request_timeout,
    readyTimeoutSeconds: sandbox.ready_timeout,
    readRoots: [skillsVirtual],
  };
  return new AioSandboxProvider(settings, local);
}
