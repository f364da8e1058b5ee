// Port of DeerFlow agents/middlewares/clarification_middleware.py `_normalize_fields` and the form part of
// `_format_clarification_message`: the version-2 `form` clarification (several values in one card).

/** Field types a form may use; anything else degrades to `text` so a card is always renderable. */
export const FORM_FIELD_TYPES = new Set(["text", "textarea", "number", "select", "multi_select", "checkbox", "date"]);
const OPTION_FIELD_TYPES = new Set(["select", "multi_select"]);
/**
 * Names that collide with JavaScript `Object.prototype` members: the web app keeps form values in a plain object
 * keyed by field name, where these would read inherited members instead of the user's input.
 */
export const RESERVED_FIELD_NAMES = new Set([
  "__proto__",
  "constructor",
  "prototype",
  "toString",
  "toLocaleString",
  "valueOf",
  "hasOwnProperty",
  "isPrototypeOf",
  "propertyIsEnumerable",
  "__defineGetter__",
  "__defineSetter__",
  "__lookupGetter__",
  "__lookupSetter__",
]);
/** Most fields in one form. */
export const MAX_FORM_FIELDS = 16;
/** Most options of one select field. */
export const MAX_FIELD_OPTIONS = 24;
/** Longest name, label, option or placeholder, in characters. */
export const MAX_FIELD_TEXT_CHARS = 200;
/** Largest serialized field list, in UTF-8 bytes (keeps the plain-text fallback within chat-channel limits). */
export const MAX_FORM_SERIALIZED_BYTES = 16_384;

/** One validated form field of a version-2 clarification. */
export interface FormField {
  name: string;
  label: string;
  type: string;
  required: boolean;
  options?: { id: string; label: string; value: string }[];
  placeholder?: string;
}

/** A model-sent boolean: true, a non-zero number, or the string "true" (any case). */
function toBool(raw: unknown): boolean {
  if (typeof raw === "boolean") return raw;
  if (typeof raw === "number") return raw !== 0;
  return typeof raw === "string" && raw.trim().toLowerCase() === "true";
}

/**
 * Validates the `fields` argument of `ask_clarification` into the form schema. Atomic: any broken entry (not an
 * object, missing/blank/reserved/duplicate name, more than {@link MAX_FORM_FIELDS} fields, more than
 * {@link MAX_FIELD_OPTIONS} options, a text over {@link MAX_FIELD_TEXT_CHARS} characters, a list serializing to
 * more than {@link MAX_FORM_SERIALIZED_BYTES} bytes) discards the whole form (`[]`), so a card never renders
 * "complete" while missing a field; the caller then falls back to options or free text. Benign problems degrade
 * locally: an unknown type, or a select without options, becomes `text`. A JSON string is decoded first.
 * @param normalizeOptionLabels the options normalization of the middleware (JSON decode, tags stripped, trimmed,
 *   blanks and duplicates dropped), applied to each select field's `options`.
 */
export function normalizeFields(raw: unknown, normalizeOptionLabels: (raw: unknown) => string[]): FormField[] {
  let fields = raw;
  if (typeof fields === "string") {
    try {
      fields = JSON.parse(fields);
    } catch {
      return [];
    }
  }
  if (!Array.isArray(fields) || fields.length > MAX_FORM_FIELDS) return [];
  const out: FormField[] = [];
  const seen = new Set<string>();
  for (const entry of fields) {
    if (!entry || typeof entry !== "object" || Array.isArray(entry)) return [];
    const e = entry as Record<string, unknown>;
    if (typeof e.name !== "string" || !e.name.trim()) return [];
    const name = e.name.trim();
    if (RESERVED_FIELD_NAMES.has(name) || seen.has(name) || name.length > MAX_FIELD_TEXT_CHARS) return [];
    seen.add(name);
    const label = typeof e.label === "string" && e.label.trim() ? e.label.trim() : name;
    if (label.length > MAX_FIELD_TEXT_CHARS) return [];
    let type = typeof e.type === "string" && FORM_FIELD_TYPES.has(e.type) ? e.type : "text";
    const options = OPTION_FIELD_TYPES.has(type) ? normalizeOptionLabels(e.options) : [];
    if (options.length > MAX_FIELD_OPTIONS || options.some((o) => o.length > MAX_FIELD_TEXT_CHARS)) return [];
    if (OPTION_FIELD_TYPES.has(type) && !options.length) type = "text";
    const field: FormField = { name, label, type, required: toBool(e.required) };
    if (OPTION_FIELD_TYPES.has(type)) field.options = options.map((o, i) => ({ id: `${name}-option-${i + 1}`, label: o, value: o }));
    if (typeof e.placeholder === "string" && e.placeholder.trim()) {
      if (e.placeholder.trim().length > MAX_FIELD_TEXT_CHARS) return [];
      field.placeholder = e.placeholder.trim();
    }
    out.push(field);
  }
  if (Buffer.byteLength(JSON.stringify(out)) > MAX_FORM_SERIALIZED_BYTES) return [];
  return out;
}

/**
 * The plain-text rendering of a form (what chat channels and older clients show): one numbered line per field
 * with "(required)", its options joined by " / " and "(multiple allowed)" for multi-selects, then
 * "Please reply with a value for each field."
 */
export function formatFormLines(fields: readonly FormField[]): string {
  const lines = fields.map((f, i) => {
    let line = `  ${i + 1}. ${f.label}`;
    if (f.required) line += " (required)";
    if (f.options?.length) {
      line += ` — options: ${f.options.map((o) => o.label).join(" / ")}`;
      if (f.type === "multi_select") line += " (multiple allowed)";
    }
    return line;
  });
  return [...lines, "", "Please reply with a value for each field."].join("\n");
}
