// The SSRF guard of the research tools: every URL the model supplies is screened before the gateway (or a
// third-party reader acting for it) touches it. Rules (a stricter port of DeerFlow community/url_safety.py):
// only http(s); no credentials in the URL; the host resolved and EVERY address checked against the non-public
// ranges of ipaddr.js (loopback, private, link-local, CGNAT, multicast, unspecified, reserved, IPv4-mapped and
// the other IPv6 transition forms); cloud metadata names and addresses refused; each redirect hop re-checked; and
// the connection made to the very address that was checked (the undici Agent's `connect.lookup` is the checking
// resolver, so no DNS rebinding fits between check and connect). The WHATWG URL parser already turns decimal,
// octal and hex IPv4 forms into dotted quads and IDNs into punycode, so the checks see canonical hosts.
import { lookup as dnsLookup, type LookupAddress, type LookupOptions } from "node:dns";
import ipaddr from "ipaddr.js";
import { Agent, fetch as undiciFetch } from "undici";
import { WebToolError } from "./web-error.js";

/** Host names never fetched: local names and the cloud metadata services (GCP, AWS, Azure, Alibaba, Oracle). */
const BLOCKED_HOSTNAMES = new Set(["localhost", "metadata", "metadata.google.internal", "metadata.goog", "instance-data", "instance-data.ec2.internal", "metadata.azure.internal", "metadata.tencentyun.com"]);
/** Cloud metadata addresses: refused even with `allow_private_addresses` (no tool ever needs instance credentials). */
const METADATA_ADDRESSES = new Set(["169.254.169.254", "169.254.170.2", "100.100.100.200", "192.0.0.192", "fd00:ec2::254"]);

/** Largest response body the guarded fetch reads, in bytes (5 MiB). */
export const DEFAULT_MAX_BYTES = 5 * 1024 * 1024;
/** Redirect hops the guarded fetch follows before giving up. */
export const DEFAULT_MAX_REDIRECTS = 5;

/** Options of the guard: `allowPrivateAddresses` is the tool entry's `allow_private_addresses`. */
export interface GuardOptions {
  allowPrivateAddresses?: boolean;
}

/**
 * Why `address` may not be reached, or null when it may. Public unicast only (ipaddr.js `range() === "unicast"`,
 * an IPv4-mapped IPv6 judged as its IPv4 address); metadata addresses always refused; other non-public ranges
 * allowed with `allowPrivateAddresses`. Unparseable input is refused.
 */
export function blockedAddressReason(address: string, options: GuardOptions = {}): string | null {
  let ip: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    ip = ipaddr.process(address.replace(/^\[|\]$/g, ""));
  } catch {
    return `'${address}' is not an IP address`;
  }
  const canonical = ip.toString();
  if (METADATA_ADDRESSES.has(canonical)) return `${canonical} is a cloud metadata address`;
  const range = ip.range();
  if (range === "unicast" || options.allowPrivateAddresses) return null;
  return `${canonical} is a non-public address (${range})`;
}

function refuse(message: string): never {
  throw new WebToolError("blocked_url", message);
}

/**
 * Parses and screens a URL without resolving it: http(s) only, no user name or password, a host present, not a
 * blocked name (`localhost`, `*.localhost`, metadata names), and an IP-literal host checked as an address.
 * @returns the parsed URL (host canonical: IPv4 dotted, IDN in punycode).
 * @throws WebToolError `blocked_url` (or `invalid_input` for a string that is no URL).
 */
export function checkUrlSyntax(raw: string, options: GuardOptions = {}): URL {
  let url: URL;
  try {
    url = new URL(raw.trim());
  } catch {
    throw new WebToolError("invalid_input", "not a valid absolute URL (it must include the scheme, e.g. https://example.com)");
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") refuse(`only http:// and https:// URLs are supported, not ${url.protocol}`);
  if (url.username || url.password) refuse("URLs with credentials (user:password@) are not fetched");
  const host = url.hostname.replace(/\.$/, "").toLowerCase();
  if (!host) refuse("the URL has no host");
  if (BLOCKED_HOSTNAMES.has(host) || host.endsWith(".localhost")) {
    if (!(options.allowPrivateAddresses && (host === "localhost" || host.endsWith(".localhost")))) refuse(`the host ${host} is not allowed`);
  }
  if (ipaddr.isValid(host.replace(/^\[|\]$/g, ""))) {
    const reason = blockedAddressReason(host, options);
    if (reason) refuse(`the URL points at ${reason}`);
  }
  return url;
}

/** Resolves `host` (all addresses) and checks each; throws on the first blocked one. */
async function resolveChecked(host: string, options: GuardOptions): Promise<LookupAddress[]> {
  const addresses = await new Promise<LookupAddress[]>((resolve, reject) => dnsLookup(host, { all: true }, (err, list) => (err ? reject(err) : resolve(list))));
  for (const a of addresses) {
    const reason = blockedAddressReason(a.address, options);
    if (reason) refuse(`${host} resolves to ${reason}`);
  }
  return addresses;
}

/**
 * Screens a URL completely (syntax, then every address its host resolves to) before it is handed to a
 * third-party reader (Jina, Firecrawl, ...), which fetches it from its own network.
 * @throws WebToolError `blocked_url`, `invalid_input`, or `network` when the host does not resolve.
 */
export async function assertPublicUrl(raw: string, options: GuardOptions = {}): Promise<URL> {
  const url = checkUrlSyntax(raw, options);
  if (options.allowPrivateAddresses || ipaddr.isValid(url.hostname.replace(/^\[|\]$/g, ""))) return url;
  try {
    await resolveChecked(url.hostname, options);
  } catch (err) {
    if (err instanceof WebToolError) throw err;
    throw new WebToolError("network", `the host ${url.hostname} could not be resolved`);
  }
  return url;
}

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/** A `net.connect` lookup that resolves, checks every address, and hands only checked addresses to the socket. */
function checkedLookup(options: GuardOptions) {
  return (host: string, lookupOptions: LookupOptions, callback: LookupCallback): void => {
    resolveChecked(host, options).then(
      (all) => {
        const wanted = lookupOptions.family === 4 || lookupOptions.family === 6 ? all.filter((a) => a.family === lookupOptions.family) : all;
        if (wanted.length === 0) return callback(Object.assign(new Error(`no address for ${host}`), { code: "ENOTFOUND" }), "", 0);
        if (lookupOptions.all) return callback(null, wanted);
        callback(null, wanted[0].address, wanted[0].family);
      },
      (err: NodeJS.ErrnoException) => callback(err, "", 0),
    );
  };
}

// One pooled Agent per policy: connections are made only to addresses the checked lookup returned.
const agents = new Map<boolean, Agent>();
function agentFor(options: GuardOptions): Agent {
  const key = options.allowPrivateAddresses === true;
  let agent = agents.get(key);
  if (!agent) {
    agent = new Agent({ connect: { lookup: checkedLookup(options) as never }, connections: 64 });
    agents.set(key, agent);
  }
  return agent;
}

/**
 * Reads a body stream up to `maxBytes`, refusing early on a larger `content-length` and cancelling the stream the
 * moment the count passes the cap (a 10 GB or never-ending body costs at most `maxBytes` of memory).
 * @throws WebToolError `too_large`.
 */
export async function readCapped(body: ReadableStream<Uint8Array> | null, maxBytes: number, contentLength?: string | null): Promise<Buffer> {
  if (!body) return Buffer.alloc(0);
  const declared = Number(contentLength);
  const tooLarge = () => new WebToolError("too_large", `the response is larger than ${Math.round(maxBytes / 1024 / 1024)} MB`);
  if (contentLength && Number.isFinite(declared) && declared > maxBytes) {
    await body.cancel().catch(() => {});
    throw tooLarge();
  }
  const chunks: Buffer[] = [];
  let total = 0;
  const reader = body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > maxBytes) {
      await reader.cancel().catch(() => {});
      throw tooLarge();
    }
    chunks.push(Buffer.from(value.buffer, value.byteOffset, value.byteLength));
  }
  return Buffer.concat(chunks, total);
}

/** Options of {@link guardedFetch}. */
export interface GuardedFetchOptions extends GuardOptions {
  /** Aborts the whole exchange, body included (the tool's timeout and the run's cancellation). */
  signal: AbortSignal;
  maxBytes?: number;
  maxRedirects?: number;
  headers?: Record<string, string>;
}

/** A fully read response of {@link guardedFetch}. */
export interface GuardedResponse {
  /** The final URL, after redirects. */
  url: string;
  status: number;
  headers: Headers;
  body: Buffer;
}

/** Maps a failed response status to the tool error the model sees. */
export function statusError(status: number, who = "the server"): WebToolError {
  if (status === 429) return new WebToolError("rate_limited", `${who} rate-limited the request (HTTP 429)`);
  return new WebToolError("http_error", `${who} answered HTTP ${status}`);
}

const REDIRECTS = new Set([301, 302, 303, 307, 308]);

/**
 * GET with the SSRF guard on every hop: the URL screened ({@link checkUrlSyntax}), the connection made through the
 * checking resolver, redirects followed by hand (at most `maxRedirects`, a loop refused), HTTP errors and 429 as
 * WebToolErrors, the body read up to `maxBytes` ({@link readCapped}).
 * @throws WebToolError for every refusal and failure (the tool runner classifies transport errors).
 */
export async function guardedFetch(raw: string, options: GuardedFetchOptions): Promise<GuardedResponse> {
  const maxRedirects = options.maxRedirects ?? DEFAULT_MAX_REDIRECTS;
  const seen = new Set<string>();
  let url = checkUrlSyntax(raw, options);
  for (let hop = 0; ; hop++) {
    seen.add(url.href);
    const res = await fetchHop(url, options);
    const location = res.headers.get("location");
    if (REDIRECTS.has(res.status) && location) {
      await res.body?.cancel().catch(() => {});
      if (hop >= maxRedirects) throw new WebToolError("bad_response", `too many redirects (more than ${maxRedirects})`);
      const next = checkUrlSyntax(new URL(location, url).href, options);
      if (seen.has(next.href)) throw new WebToolError("bad_response", "redirect loop");
      url = next;
      continue;
    }
    if (res.status >= 400) {
      await res.body?.cancel().catch(() => {});
      throw statusError(res.status);
    }
    const body = await readCapped(res.body as ReadableStream<Uint8Array> | null, options.maxBytes ?? DEFAULT_MAX_BYTES, res.headers.get("content-length"));
    return { url: url.href, status: res.status, headers: res.headers as unknown as Headers, body };
  }
}

/** One hop: a refusal raised inside the checking resolver comes back as the cause of undici's TypeError. */
async function fetchHop(url: URL, options: GuardedFetchOptions) {
  try {
    return await undiciFetch(url, { redirect: "manual", signal: options.signal, dispatcher: agentFor(options), headers: { "user-agent": USER_AGENT, accept: "text/html,application/xhtml+xml,text/plain,application/pdf;q=0.9,*/*;q=0.8", ...options.headers } });
  } catch (err) {
    const cause = (err as { cause?: unknown }).cause;
    if (cause instanceof WebToolError) throw cause;
    throw err;
  }
}

/** The User-Agent of the gateway's own fetches. */
export const USER_AGENT = "Mozilla/5.0 (compatible; deerflow-gateway/1.0; +https://github.com/bytedance/deer-flow)";
