// Chat commands (DeerFlow app/channels/commands.py + the manager's dispatcher): parsed here, answered by the
// manager. A command is recognised only at the start of the message (after leading mentions, as upstream).

/** The commands the manager answers (upstream's set plus `/stop`, `/model` and `/agent`). */
export const CHANNEL_COMMANDS = ["/new", "/stop", "/status", "/models", "/model", "/agent", "/help"] as const;

/** A parsed command: its name without the slash and the rest of the line. */
export interface ParsedCommand {
  name: string;
  arg: string;
}

/** The help text (upstream's `/help` answer, with this gateway's commands). */
export const HELP_TEXT = [
  "Available commands:",
  "/new — Start a new conversation",
  "/stop — Stop the answer in progress",
  "/status — Show current thread info",
  "/models — List available models",
  "/model <name> — Use this model from now on (/model default: the configured one)",
  "/agent <name> — Talk to this custom agent from now on (/agent default: the lead agent)",
  "/help — Show this help",
].join("\n");

/** Upstream's answer to an unknown command. */
export function unknownCommandReply(name: string): string {
  return `Unknown command: /${name}. Available commands: ${[...CHANNEL_COMMANDS].sort().join(" | ")}`;
}

/** Drops leading mention tokens (`@bot`, `<@U123>`) so `@bot /new` reads as `/new` (upstream strip_leading_mentions). */
export function stripLeadingMentions(text: string): string {
  let rest = text;
  for (;;) {
    const m = /^(<@[^>\s]+>|@\S+)\s*/.exec(rest);
    if (!m) return rest;
    rest = rest.slice(m[0].length);
  }
}

/**
 * The connect code of `/connect <code>` (any platform) or Telegram's deep-link `/start <code>`, or null
 * (upstream extract_connect_code and telegram's start-token path).
 */
export function extractConnectCode(text: string): string | null {
  const m = /^\/(connect|start)(?:@\S+)?\s+(\S+)\s*$/i.exec(stripLeadingMentions(text.trim()));
  return m ? m[2] : null;
}

/** The command at the start of `text` (Telegram's `/new@bot_name` form included), or null for a chat message. */
export function parseCommand(text: string): ParsedCommand | null {
  const m = /^\/([A-Za-z_]+)(?:@\S+)?(?:\s+([\s\S]*))?$/.exec(stripLeadingMentions(text).trim());
  return m ? { name: m[1].toLowerCase(), arg: (m[2] ?? "").trim() } : null;
}
