// Thread-state channels only the server writes. A client value for one of them is refused at the edge: some
// name files the server later reads (`viewed_images`, `uploaded_files`, `thread_data`), one picks the sandbox the
// tools act in (`sandbox`), the rest are bookkeeping of middlewares and tools (artifacts, delegations...).
import { ValidationError, type ValidationIssue } from "../errors.js";
import { VIRTUAL_THREAD_DATA } from "./middlewares/thread-data.js";

/**
 * ThreadState channels a client may not set through run `input` or `POST /threads/{id}/state`. A client may
 * write `messages`, `title`, `todos` and `goal` (the web app renames threads through `title`).
 */
export const SERVER_OWNED_STATE_KEYS = [
  "sandbox",
  "thread_data",
  "viewed_images",
  "artifacts",
  "uploaded_files",
  "promoted",
  "delegations",
  "skill_context",
  "summary_text",
  "background_tasks",
] as const;

const OWNED: ReadonlySet<string> = new Set(SERVER_OWNED_STATE_KEYS);

/**
 * Refuses client-sent values for server-owned channels.
 * @param values The client's state values (run `input` or the state update's `values`); non-objects pass.
 * @param loc Where they sit in the body, e.g. `["body", "input"]`.
 * @throws ValidationError 422, one `server_owned_field` issue per offending key, `loc` ending in the key.
 */
export function refuseServerOwnedState(values: unknown, loc: (string | number)[]): void {
  if (!values || typeof values !== "object" || Array.isArray(values)) return;
  const issues: ValidationIssue[] = Object.keys(values)
    .filter((k) => OWNED.has(k))
    .map((k) => ({ type: "server_owned_field", loc: [...loc, k], msg: `'${k}' is maintained by the server and cannot be set by a client` }));
  if (issues.length) throw new ValidationError(issues.map((i) => i.msg).join("; "), issues);
}

/**
 * State values as a response may show them, whatever an older checkpoint holds: `thread_data` is always the
 * virtual directories, and a viewed image keeps only `{mime_type, size}` (older checkpoints recorded the host
 * path as `actual_path`). Everything else is returned unchanged; the input is not modified.
 */
export function redactStateValues(values: Record<string, unknown>): Record<string, unknown> {
  const out = { ...values };
  if (out.thread_data) out.thread_data = { ...VIRTUAL_THREAD_DATA };
  const images = out.viewed_images;
  if (images && typeof images === "object" && !Array.isArray(images)) {
    out.viewed_images = Object.fromEntries(
      Object.entries(images as Record<string, unknown>).map(([k, v]) => {
        if (!v || typeof v !== "object") return [k, v];
        const { actual_path: _hostPath, ...rest } = v as Record<string, unknown>;
        return [k, rest];
      }),
    );
  }
  return out;
}
