// Messages of the `ai-sdk-model` format: the AI SDK's `ModelMessage` (ai 7, from the
// declarations of @ai-sdk/provider-utils), wide enough that its `ModelMessage[]` goes in as it
// is, and the provider-level prompt of a language-model middleware (`LanguageModelV4Prompt`
// of @ai-sdk/provider: the same roles, file data tagged, members that may be `undefined`).

/** A JSON value as the AI SDK types it (object members may be undefined). */
export type AiSdkModelJsonValue =
  | null
  | string
  | number
  | boolean
  | Readonly<AiSdkModelJsonObject>
  | readonly AiSdkModelJsonValue[];
export type AiSdkModelJsonObject = { [key: string]: AiSdkModelJsonValue | undefined };

/** Options for a provider, by its name (`{ anthropic: { cacheControl } }`, `{ openai: { itemId } }`, …). */
export type AiSdkModelProviderOptions = Record<string, AiSdkModelJsonObject>;

/**
 * A URL object (the global `URL`), typed by what the reader uses so that consumers without the
 * DOM or Node types compile.
 */
export interface AiSdkModelUrl {
  readonly href: string;
  toString(): string;
}

/** Inline data: base64 text, bytes (a Node `Buffer` is one) or an ArrayBuffer. */
export type AiSdkModelDataContent = string | Uint8Array | ArrayBuffer;
/** Provider file ids of an uploaded file (`{ openai: 'file-…' }`). */
export type AiSdkModelProviderReference = Record<string, string>;

/** File data as a tagged union (ai 7; always this form in a provider-level prompt). */
export type AiSdkModelFileData =
  | { type: 'data'; data: AiSdkModelDataContent }
  | { type: 'url'; url: AiSdkModelUrl; originalUrl?: string | undefined }
  | { type: 'reference'; reference: AiSdkModelProviderReference }
  | { type: 'text'; text: string };

interface PartBase {
  providerOptions?: AiSdkModelProviderOptions | undefined;
}

export interface AiSdkModelTextPart extends PartBase {
  type: 'text';
  text: string;
}
/** An image (deprecated in ai 7 for a file part with an `image` media type; still accepted). */
export interface AiSdkModelImagePart extends PartBase {
  type: 'image';
  /** Base64 data, a `data:` URL or another URL as text, bytes, a URL object, a provider reference. */
  image: AiSdkModelDataContent | AiSdkModelUrl | AiSdkModelProviderReference;
  mediaType?: string | undefined;
}
export interface AiSdkModelFilePart extends PartBase {
  type: 'file';
  data: AiSdkModelFileData | AiSdkModelDataContent | AiSdkModelUrl | AiSdkModelProviderReference;
  filename?: string | undefined;
  /** `image/png`, `application/pdf`, … or a top-level type such as `image`. */
  mediaType: string;
}
export interface AiSdkModelReasoningPart extends PartBase {
  type: 'reasoning';
  text: string;
}
export interface AiSdkModelReasoningFilePart extends PartBase {
  type: 'reasoning-file';
  data:
    | { type: 'data'; data: AiSdkModelDataContent }
    | { type: 'url'; url: AiSdkModelUrl; originalUrl?: string | undefined }
    | AiSdkModelDataContent
    | AiSdkModelUrl;
  mediaType: string;
}
export interface AiSdkModelCustomPart extends PartBase {
  type: 'custom';
  /** `{provider}.{provider-type}`. */
  kind: string;
}
export interface AiSdkModelToolCallPart extends PartBase {
  type: 'tool-call';
  toolCallId: string;
  toolName: string;
  input: unknown;
  providerExecuted?: boolean | undefined;
}

/** What a tool output's `content` holds (the deprecated item types included). */
export type AiSdkModelToolContentItem = PartBase &
  (
    | { type: 'text'; text: string }
    | { type: 'file'; data: AiSdkModelFileData; mediaType: string; filename?: string | undefined }
    | { type: 'file-data'; data: string; mediaType: string; filename?: string | undefined }
    | { type: 'file-url'; url: string; mediaType?: string | undefined }
    | { type: 'file-id'; fileId: string | Record<string, string> }
    | { type: 'file-reference'; providerReference: AiSdkModelProviderReference }
    | { type: 'image-data'; data: string; mediaType: string }
    | { type: 'image-url'; url: string }
    | { type: 'image-file-id'; fileId: string | Record<string, string> }
    | { type: 'image-file-reference'; providerReference: AiSdkModelProviderReference }
    | { type: 'custom' }
  );

/** A tool's output (`ToolResultOutput`). */
export type AiSdkModelToolResultOutput = PartBase &
  (
    | { type: 'text' | 'error-text'; value: string }
    | { type: 'json' | 'error-json'; value: AiSdkModelJsonValue }
    | { type: 'execution-denied'; reason?: string | undefined }
    | { type: 'content'; value: AiSdkModelToolContentItem[] }
  );

export interface AiSdkModelToolResultPart extends PartBase {
  type: 'tool-result';
  toolCallId: string;
  toolName: string;
  output: AiSdkModelToolResultOutput;
}
export interface AiSdkModelToolApprovalRequest {
  type: 'tool-approval-request';
  approvalId: string;
  toolCallId: string;
  reason?: string | undefined;
  isAutomatic?: boolean | undefined;
  signature?: string | undefined;
  inputSchemaInput?: unknown;
}
export interface AiSdkModelToolApprovalResponse extends PartBase {
  type: 'tool-approval-response';
  approvalId: string;
  approved: boolean;
  reason?: string | undefined;
  providerExecuted?: boolean | undefined;
}

export interface AiSdkModelSystemMessage {
  role: 'system';
  content: string;
  providerOptions?: AiSdkModelProviderOptions | undefined;
}
export interface AiSdkModelUserMessage {
  role: 'user';
  content: string | Array<AiSdkModelTextPart | AiSdkModelImagePart | AiSdkModelFilePart>;
  providerOptions?: AiSdkModelProviderOptions | undefined;
}
export interface AiSdkModelAssistantMessage {
  role: 'assistant';
  content:
    | string
    | Array<
        | AiSdkModelTextPart
        | AiSdkModelCustomPart
        | AiSdkModelFilePart
        | AiSdkModelReasoningPart
        | AiSdkModelReasoningFilePart
        | AiSdkModelToolCallPart
        | AiSdkModelToolResultPart
        | AiSdkModelToolApprovalRequest
      >;
  providerOptions?: AiSdkModelProviderOptions | undefined;
}
export interface AiSdkModelToolMessage {
  role: 'tool';
  content: Array<AiSdkModelToolResultPart | AiSdkModelToolApprovalResponse>;
  providerOptions?: AiSdkModelProviderOptions | undefined;
}

/**
 * A ModelMessage. Leading system messages are the system prompt; `toMessages` writes them first
 * in `messages` (ai 7's generateText takes them there with `allowSystemInMessages: true`, or as
 * `instructions`).
 */
export type AiSdkModelMessage =
  | AiSdkModelSystemMessage
  | AiSdkModelUserMessage
  | AiSdkModelAssistantMessage
  | AiSdkModelToolMessage;

/** The system prompt: text, or the system messages it was read as. */
export type AiSdkModelSystem = string | AiSdkModelSystemMessage | AiSdkModelSystemMessage[];
