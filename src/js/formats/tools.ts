// The context tools (issue 38 item 3) in each message format: `recall_history` and
// `context_status`, whose names, descriptions and JSON-schema parameters the core owns
// (`contextToolsJson`, wording in prompts/*-tool.md). This module only wraps each definition
// the way a provider's request declares a tool; running a call is runner/tools.ts.
import { invalidArgument } from '../core/errors.js';
import { requireRaw } from '../core/raw.js';
import type { JsonObject } from '../core/types.js';

/** The names of the context tools. */
export type ContextToolName = 'recall_history' | 'context_status';

/** The formats `contextTools` writes. */
export type ContextToolFormat = 'openai-chat' | 'openai-responses' | 'anthropic' | 'gemini' | 'ai-sdk';

/** A context tool as the core defines it: its name, what it does, its JSON-schema parameters. */
export interface ContextToolDefinition {
  name: ContextToolName;
  description: string;
  parameters: JsonObject;
}

/** OpenAI Chat Completions: an entry of `tools`. */
export interface OpenAiChatTool {
  type: 'function';
  function: { name: ContextToolName; description: string; parameters: JsonObject };
}

/** OpenAI Responses: an entry of `tools` (`strict: false`: `limit` is optional). */
export interface OpenAiResponsesTool {
  type: 'function';
  name: ContextToolName;
  description: string;
  parameters: JsonObject;
  strict: false;
}

/** Anthropic Messages: an entry of `tools`. */
export interface AnthropicTool {
  name: ContextToolName;
  description: string;
  input_schema: JsonObject;
}

/** Gemini: an entry of `tools` holding both declarations. */
export interface GeminiTool {
  functionDeclarations: Array<{ name: ContextToolName; description: string; parameters: JsonObject }>;
}

/**
 * The AI SDK's schema object, as its `jsonSchema()` makes it (marked with the global symbol
 * `vercel.ai.schema`), so the tools need no import of the `ai` package.
 */
export interface AiSdkToolSchema {
  readonly jsonSchema: JsonObject;
  readonly validate: undefined;
  readonly _type: undefined;
}

/** An AI SDK tool (an entry of `generateText`'s `tools`): without `execute` here (see `ctxfold/ai-sdk`'s `contextTools`). */
export interface AiSdkContextTool {
  description: string;
  inputSchema: AiSdkToolSchema;
}

/** What `contextTools` returns for each format. */
export interface ContextToolsOf {
  'openai-chat': OpenAiChatTool[];
  'openai-responses': OpenAiResponsesTool[];
  anthropic: AnthropicTool[];
  gemini: GeminiTool[];
  'ai-sdk': Record<ContextToolName, AiSdkContextTool>;
}

export interface ContextToolsOptions<F extends ContextToolFormat = ContextToolFormat> {
  format: F;
}

const FORMATS: readonly ContextToolFormat[] = ['openai-chat', 'openai-responses', 'anthropic', 'gemini', 'ai-sdk'];

/** The core's definitions, read once. */
let definitions: ContextToolDefinition[] | undefined;

/** The two definitions as the core gives them, `recall_history` first (fresh copies). */
export function contextToolDefinitions(): ContextToolDefinition[] {
  definitions ??= JSON.parse(requireRaw().contextToolsJson()) as ContextToolDefinition[];
  return JSON.parse(JSON.stringify(definitions)) as ContextToolDefinition[];
}

/** A JSON schema without `additionalProperties`, which Gemini's schema subset does not take. */
function geminiSchema(schema: JsonObject): JsonObject {
  const { additionalProperties: _, ...rest } = schema;
  return rest;
}

/** The AI SDK schema object of a JSON schema (what its `jsonSchema()` returns). */
function aiSdkSchema(schema: JsonObject): AiSdkToolSchema {
  return Object.freeze({
    [Symbol.for('vercel.ai.schema')]: true,
    _type: undefined,
    jsonSchema: schema,
    validate: undefined,
  });
}

/**
 * The context tools `recall_history` and `context_status` declared in `format`: an array of
 * `tools` entries for 'openai-chat', 'openai-responses', 'anthropic' and 'gemini' (one entry
 * with both `functionDeclarations`), an object of AI SDK tools (without `execute`) for
 * 'ai-sdk'. Run a call with `runContextTool`, or let the Maintainer (`contextTools: true`) or
 * `ctxfold/ai-sdk` do it. Throws `E_INVALID_ARGUMENT` for another format.
 */
export function contextTools<F extends ContextToolFormat>(options: ContextToolsOptions<F>): ContextToolsOf[F];
export function contextTools(options: ContextToolsOptions): ContextToolsOf[ContextToolFormat] {
  const format: unknown = (options as { format?: unknown } | null | undefined)?.format;
  const defs = contextToolDefinitions();
  switch (format) {
    case 'openai-chat':
      return defs.map(({ name, description, parameters }) => ({
        type: 'function' as const,
        function: { name, description, parameters },
      }));
    case 'openai-responses':
      return defs.map(({ name, description, parameters }) => ({
        type: 'function' as const,
        name,
        description,
        parameters,
        strict: false as const,
      }));
    case 'anthropic':
      return defs.map(({ name, description, parameters }) => ({ name, description, input_schema: parameters }));
    case 'gemini':
      return [
        {
          functionDeclarations: defs.map(({ name, description, parameters }) => ({
            name,
            description,
            parameters: geminiSchema(parameters),
          })),
        },
      ];
    case 'ai-sdk': {
      const out = {} as Record<ContextToolName, AiSdkContextTool>;
      for (const { name, description, parameters } of defs) {
        out[name] = { description, inputSchema: aiSdkSchema(parameters) };
      }
      return out;
    }
    default:
      throw invalidArgument(
        `contextTools(): format must be one of ${FORMATS.map((f) => `'${f}'`).join(', ')}, got ${JSON.stringify(format)}`,
      );
  }
}
