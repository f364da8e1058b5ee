// A browser-like session for tests: keeps the cookies the gateway sets and echoes the CSRF cookie in
// X-CSRF-Token on state-changing requests, as the DeerFlow web app's fetcher does.

/** Cookies of one browser, and requests made with them. */
export class Session {
  readonly cookies = new Map<string, string>();

  constructor(readonly baseUrl: string) {}

  /** Applies a response's Set-Cookie headers (Max-Age=0 deletes). */
  absorb(res: Response): Response {
    for (const line of res.headers.getSetCookie()) {
      const [pair, ...attrs] = line.split(";");
      const eq = pair.indexOf("=");
      const name = pair.slice(0, eq).trim();
      const value = decodeURIComponent(pair.slice(eq + 1).trim());
      if (attrs.some((a) => /^\s*max-age=0\s*$/i.test(a)) || value === "") this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
    return res;
  }

  /** The Cookie header value. */
  get cookieHeader(): string {
    return [...this.cookies].map(([k, v]) => `${k}=${encodeURIComponent(v)}`).join("; ");
  }

  /** fetch with the cookies (and the CSRF header on POST/PUT/PATCH/DELETE unless `csrf: false`). */
  async fetch(path: string, init: RequestInit & { json?: unknown; csrf?: boolean } = {}): Promise<Response> {
    const headers = new Headers(init.headers);
    if (this.cookies.size) headers.set("cookie", this.cookieHeader);
    const method = (init.method ?? (init.json !== undefined ? "POST" : "GET")).toUpperCase();
    if (init.csrf !== false && ["POST", "PUT", "PATCH", "DELETE"].includes(method) && this.cookies.has("csrf_token")) headers.set("x-csrf-token", this.cookies.get("csrf_token")!);
    let body = init.body;
    if (init.json !== undefined) {
      headers.set("content-type", "application/json");
      body = JSON.stringify(init.json);
    }
    return this.absorb(await fetch(`${this.baseUrl}${path}`, { ...init, method, headers, body }));
  }

  /** The web app's login: form-encoded `username`, `password`, `remember_me`. */
  login(email: string, password: string, headers: Record<string, string> = {}): Promise<Response> {
    return this.fetch("/api/v1/auth/login/local", {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded", ...headers },
      body: new URLSearchParams({ username: email, password, remember_me: "true" }).toString(),
    });
  }
}

/** Creates the first admin through /initialize (or a user through /register) and returns its signed-in session. */
export async function signUp(baseUrl: string, email: string, password: string, as: "initialize" | "register" = "register"): Promise<Session> {
  const session = new Session(baseUrl);
  const res = await session.fetch(`/api/v1/auth/${as}`, { json: { email, password } });
  if (res.status !== 201) throw new Error(`${as} failed: ${res.status} ${await res.text()}`);
  return session;
}
