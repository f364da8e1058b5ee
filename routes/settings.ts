// Settings routes of the DeerFlow web app: skills (app/gateway/routers/skills.py) and MCP servers (mcp.py).
// Both edit extensions_config.json through the atomic writer; writes need the admin role, as upstream.
import type { FastifyInstance, FastifyRequest } from "fastify";
import { z } from "zod";
import { principalOf } from "../src/auth/principal.js";
import { ForbiddenError, NotFoundError } from "../src/errors.js";
import { customSkillView, skillView, userSkillStorage } from "../src/runtime/webapp/custom-skills.js";
import { currentExtensions, maskedServers, replaceMcpServers, resetMcpToolCache, setMcpServerEnabled, setSkillEnabled } from "../src/runtime/webapp/extensions-admin.js";
import { doc, validInput } from "./openapi.js";

const SkillToggle = z.looseObject({ enabled: z.boolean() });
const SkillContent = z.looseObject({ content: z.string().min(1).max(512 * 1024) });
const SkillCreate = SkillContent.extend({ name: z.string().min(1).max(128) });
const Rollback = z.looseObject({ history_index: z.number().int().default(-1) });
const McpConfigBody = z.looseObject({ mcp_servers: z.record(z.string().min(1).max(128), z.looseObject({})) });
const McpStateBody = z.looseObject({ server_name: z.string().min(1), enabled: z.boolean() });

type NameParams = { Params: { skill_name: string } };

/** Upstream `_ADMIN_REQUIRED_DETAIL`: settings writes need the admin role. */
export function requireAdmin(request: FastifyRequest): string {
  const principal = principalOf(request);
  if (principal.role !== "admin") throw new ForbiddenError("Admin privileges are required to change skills or MCP servers");
  return principal.username;
}

/** Registers the settings routes under `/api`. */
export async function settingsRoutes(app: FastifyInstance): Promise<void> {
  const { getAppConfig } = app.deerflow;
  // The user's view of the skills: the same storage the lead agent and its skill_manage tool use.
  const storage = (request: FastifyRequest) => userSkillStorage(getAppConfig().skills, principalOf(request).id);
  const HUMAN = { kind: "human" } as const;

  app.get("/skills", { schema: doc("skills", "Every skill you see (public, your custom ones, legacy shared) and whether it is enabled") }, async (request) => ({
    skills: storage(request).loadSkills(currentExtensions()).map(skillView),
  }));

  app.put<NameParams>("/skills/:skill_name", { schema: doc("skills", "Enable or disable a skill (public: extensions_config.json; custom and legacy: yours only)", { body: SkillToggle }) }, async (request) => {
    requireAdmin(request);
    const body = validInput(SkillToggle, request.body);
    const s = storage(request);
    const skill = s.loadSkills(currentExtensions()).find((k) => k.name === request.params.skill_name);
    if (!skill) throw new NotFoundError(`Skill '${request.params.skill_name}' not found`);
    // Public skills are shared (extensions_config.json); a custom or legacy skill's state is the user's own, so
    // two users with a same-named custom skill toggle independently (DeerFlow `_skill_states.json`).
    if (skill.category === "public") setSkillEnabled(skill.name, body.enabled);
    else s.setEnabled(skill.name, body.enabled);
    return { ...skillView(skill), enabled: body.enabled };
  });

  app.get("/skills/custom", { schema: doc("skills", "Your custom skills") }, async (request) => ({
    skills: storage(request).loadSkills(currentExtensions()).filter((s) => s.category === "custom").map(skillView),
  }));

  app.post("/skills/custom", { schema: doc("skills", "Create a custom skill from SKILL.md text", { body: SkillCreate }) }, async (request) => {
    requireAdmin(request);
    const body = validInput(SkillCreate, request.body);
    const s = storage(request);
    s.create(body.name, body.content, HUMAN);
    return customSkillView(s, body.name.trim(), currentExtensions());
  });

  app.get<NameParams>("/skills/custom/:skill_name", { schema: doc("skills", "A custom skill with its SKILL.md text") }, async (request) => {
    requireAdmin(request);
    return customSkillView(storage(request), request.params.skill_name, currentExtensions());
  });

  app.put<NameParams>("/skills/custom/:skill_name", { schema: doc("skills", "Replace a custom skill's SKILL.md (recorded in its history)", { body: SkillContent }) }, async (request) => {
    requireAdmin(request);
    const body = validInput(SkillContent, request.body);
    const s = storage(request);
    s.edit(request.params.skill_name, body.content, HUMAN);
    return customSkillView(s, request.params.skill_name, currentExtensions());
  });

  app.delete<NameParams>("/skills/custom/:skill_name", { schema: doc("skills", "Delete a custom skill (its history is kept)") }, async (request) => {
    requireAdmin(request);
    storage(request).delete(request.params.skill_name, HUMAN);
    return { success: true };
  });

  app.get<NameParams>("/skills/custom/:skill_name/history", { schema: doc("skills", "A custom skill's edit history") }, async (request) => {
    requireAdmin(request);
    const s = storage(request);
    const name = request.params.skill_name;
    if (!s.hasSkillOrHistory(name)) throw new NotFoundError(`Custom skill '${name}' not found`);
    return { history: s.readHistory(name) };
  });

  app.post<NameParams>("/skills/custom/:skill_name/rollback", { schema: doc("skills", "Restore the content before a history entry", { body: Rollback }) }, async (request) => {
    requireAdmin(request);
    const body = validInput(Rollback, request.body);
    const s = storage(request);
    s.rollback(request.params.skill_name, body.history_index, HUMAN);
    return customSkillView(s, request.params.skill_name, currentExtensions());
  });

  app.post("/skills/reload", { schema: doc("skills", "Rescan the skills (they are rescanned on every run anyway)") }, async (request) => {
    requireAdmin(request);
    return { success: true, scope: "process", message: "Skills are rescanned on every run; nothing was cached." };
  });

  app.get("/mcp/config", { schema: doc("mcp", "MCP servers, secrets masked") }, async (request) => {
    requireAdmin(request);
    return { mcp_servers: maskedServers() };
  });

  app.put("/mcp/config", { schema: doc("mcp", "Replace the MCP servers (masked secrets keep their stored value)", { body: McpConfigBody }) }, async (request) => {
    requireAdmin(request);
    const body = validInput(McpConfigBody, request.body);
    const servers = replaceMcpServers(body.mcp_servers as Record<string, Record<string, unknown>>);
    await resetMcpToolCache();
    return { mcp_servers: servers };
  });

  app.patch("/mcp/config", { schema: doc("mcp", "Enable or disable one MCP server", { body: McpStateBody }) }, async (request) => {
    requireAdmin(request);
    const body = validInput(McpStateBody, request.body);
    const servers = setMcpServerEnabled(body.server_name, body.enabled);
    await resetMcpToolCache();
    return { mcp_servers: servers };
  });

  app.post("/mcp/cache/reset", { schema: doc("mcp", "Drop the cached MCP clients; tools reload on next use") }, async (request) => {
    requireAdmin(request);
    await resetMcpToolCache();
    return { success: true, message: "MCP tools cache reset. Tools will reload on next use." };
  });
}
