// Chat models shipped with the gateway, addressable from config.yaml as `use: deerflow-gateway:<Export>`.
export { ScriptedChatModel, type ScriptedChatModelInput } from "./scripted-chat-model.js";
