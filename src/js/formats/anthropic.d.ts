// Messages of the `anthropic` format: the `messages` and `system` of an Anthropic Messages API
// request (POST /v1/messages), from Anthropic's documented shapes. docs/guide/formats.md says
// what maps to what.
import type { JsonObject, JsonValue } from '../core/session.js';

/** A prompt-caching breakpoint. */
export interface AnthropicCacheControl {
  type: 'ephemeral';
  ttl?: '5m' | '1h';
}

/** What every block may carry. */
interface AnthropicBlockBase {
  cache_control?: AnthropicCacheControl | null;
}

export interface AnthropicTextBlock extends AnthropicBlockBase {
  type: 'text';
  text: string;
  /** Citations of documents or search results (kept as they are). */
  citations?: JsonObject[] | null;
}

export type AnthropicImageSource =
  | { type: 'base64'; media_type: string; data: string }
  | { type: 'url'; url: string }
  | { type: 'file'; file_id: string };

export interface AnthropicImageBlock extends AnthropicBlockBase {
  type: 'image';
  source: AnthropicImageSource;
}

export interface AnthropicDocumentBlock extends AnthropicBlockBase {
  type: 'document';
  source:
    | { type: 'base64'; media_type: string; data: string }
    | { type: 'text'; media_type: string; data: string }
    | { type: 'content'; content: string | Array<AnthropicTextBlock | AnthropicImageBlock> }
    | { type: 'url'; url: string }
    | { type: 'file'; file_id: string };
  title?: string | null;
  context?: string | null;
  citations?: { enabled?: boolean } | null;
}

export interface AnthropicSearchResultBlock extends AnthropicBlockBase {
  type: 'search_result';
  source: string;
  title: string;
  content: AnthropicTextBlock[];
  citations?: { enabled?: boolean };
}

export interface AnthropicContainerUploadBlock extends AnthropicBlockBase {
  type: 'container_upload';
  file_id: string;
}

export interface AnthropicToolResultBlock extends AnthropicBlockBase {
  type: 'tool_result';
  tool_use_id: string;
  content?:
    | string
    | Array<AnthropicTextBlock | AnthropicImageBlock | AnthropicDocumentBlock | AnthropicSearchResultBlock>;
  is_error?: boolean;
}

export type AnthropicUserBlock =
  | AnthropicTextBlock
  | AnthropicImageBlock
  | AnthropicDocumentBlock
  | AnthropicSearchResultBlock
  | AnthropicContainerUploadBlock
  | AnthropicToolResultBlock;

export interface AnthropicThinkingBlock extends AnthropicBlockBase {
  type: 'thinking';
  thinking: string;
  /** Opaque; replayed byte for byte. */
  signature: string;
}

export interface AnthropicRedactedThinkingBlock extends AnthropicBlockBase {
  type: 'redacted_thinking';
  data: string;
}

export interface AnthropicToolUseBlock extends AnthropicBlockBase {
  type: 'tool_use';
  id: string;
  name: string;
  input: JsonObject;
}

/** A server-side compaction summary (`compact-2026-01-12` beta). */
export interface AnthropicCompactionBlock extends AnthropicBlockBase {
  type: 'compaction';
  content: string | null;
  encrypted_content?: string | null;
}

/** Blocks of server-run tools (web search and fetch, code execution, tool search, MCP). */
export interface AnthropicServerToolBlock {
  type:
    | 'server_tool_use'
    | 'web_search_tool_result'
    | 'web_fetch_tool_result'
    | 'code_execution_tool_result'
    | 'bash_code_execution_tool_result'
    | 'text_editor_code_execution_tool_result'
    | 'tool_search_tool_result'
    | 'mcp_tool_use'
    | 'mcp_tool_result'
    | 'container_upload';
  id?: string;
  tool_use_id?: string;
  name?: string;
  [key: string]: JsonValue | undefined;
}

export type AnthropicAssistantBlock =
  | AnthropicTextBlock
  | AnthropicThinkingBlock
  | AnthropicRedactedThinkingBlock
  | AnthropicToolUseBlock
  | AnthropicCompactionBlock
  | AnthropicServerToolBlock;

export interface AnthropicUserMessage {
  role: 'user';
  content: string | AnthropicUserBlock[];
}

export interface AnthropicAssistantMessage {
  role: 'assistant';
  content: string | AnthropicAssistantBlock[];
}

/** A change of the tool set inside a mid-conversation system message. */
export interface AnthropicToolChangeBlock {
  type: 'tool_addition' | 'tool_removal';
  tool: { type: 'tool_reference'; name: string };
}

/** A mid-conversation system message (read as a developer message). */
export interface AnthropicSystemMessage {
  role: 'system';
  content: string | Array<AnthropicTextBlock | AnthropicToolChangeBlock>;
  clear_at?: 'never' | 'next_user_message';
  output_config?: { effort?: 'low' | 'medium' | 'high' | 'xhigh' | 'max' };
}

/** An element of the request's `messages`. */
export type AnthropicMessage = AnthropicUserMessage | AnthropicAssistantMessage | AnthropicSystemMessage;

/** The request's `system`: text, or text blocks (with cache breakpoints). */
export type AnthropicSystem = string | AnthropicTextBlock[];
