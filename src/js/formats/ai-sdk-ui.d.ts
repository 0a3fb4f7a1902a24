// Messages of the `ai-sdk-ui` format: the AI SDK's `UIMessage` (ai 7) as `useChat` holds it.
// Written from the SDK's declarations and wide enough that its `UIMessage[]` is accepted as
// it is (tool inputs and outputs, data and metadata are `unknown` here).

/** A JSON value as the AI SDK types it (object members may be undefined). */
export type AiSdkUiJsonValue =
  | null
  | string
  | number
  | boolean
  | Readonly<AiSdkUiJsonObject>
  | readonly AiSdkUiJsonValue[];
export type AiSdkUiJsonObject = { [key: string]: AiSdkUiJsonValue | undefined };

/** A source a text part cites (the SDK's citation). */
export interface AiSdkUiCitation {
  source:
    | {
        type: 'source';
        sourceType: 'url';
        id: string;
        url: string;
        title?: string;
        providerMetadata?: AiSdkUiProviderMetadata;
      }
    | {
        type: 'source';
        sourceType: 'document';
        id: string;
        mediaType: string;
        title: string;
        filename?: string;
        providerMetadata?: AiSdkUiProviderMetadata;
      };
  startIndex?: number;
  endIndex?: number;
  citedText?: string;
}

/** A provider's metadata on a part (`{ anthropic: { signature } }`, `{ openai: { itemId } }`, …). */
export type AiSdkUiProviderMetadata = Record<string, AiSdkUiJsonObject>;

export interface AiSdkUiTextPart {
  type: 'text';
  text: string;
  state?: 'streaming' | 'done';
  citations?: AiSdkUiCitation[];
  providerMetadata?: AiSdkUiProviderMetadata;
}
export interface AiSdkUiReasoningPart {
  type: 'reasoning';
  id?: string;
  text: string;
  state?: 'streaming' | 'done';
  providerMetadata?: AiSdkUiProviderMetadata;
}
export interface AiSdkUiFilePart {
  type: 'file';
  /** `image/png`, `application/pdf`, … (or a top-level type such as `image`). */
  mediaType: string;
  filename?: string;
  /** A hosted file's URL or a `data:` URL. */
  url: string;
  /** Provider file ids of an uploaded file (`{ openai: 'file-…' }`); used instead of `url`. */
  providerReference?: Record<string, string>;
  providerMetadata?: AiSdkUiProviderMetadata;
}
export interface AiSdkUiReasoningFilePart {
  type: 'reasoning-file';
  mediaType: string;
  url: string;
  providerMetadata?: AiSdkUiProviderMetadata;
}
export interface AiSdkUiSourceUrlPart {
  type: 'source-url';
  sourceId: string;
  url: string;
  title?: string;
  providerMetadata?: AiSdkUiProviderMetadata;
}
export interface AiSdkUiSourceDocumentPart {
  type: 'source-document';
  sourceId: string;
  mediaType: string;
  title: string;
  filename?: string;
  providerMetadata?: AiSdkUiProviderMetadata;
}
export interface AiSdkUiCustomPart {
  type: 'custom';
  kind: `${string}.${string}`;
  providerMetadata?: AiSdkUiProviderMetadata;
}
export interface AiSdkUiSteeringPart {
  type: 'steering-message';
  id: string;
  parts: Array<AiSdkUiTextPart | AiSdkUiFilePart>;
}
export interface AiSdkUiStepStartPart {
  type: 'step-start';
}
/** A `data-<name>` part: the app's own data, for the UI only (the model does not see it). */
export interface AiSdkUiDataPart {
  type: `data-${string}`;
  id?: string;
  data: unknown;
}

/** What the writer puts in the `data-compaction` part of a compacted view's first UIMessage. */
export interface AiSdkUiCompactionData {
  /** The compaction entry's summary (the text part of the same UIMessage is what the model reads). */
  summary: string;
  method?: 'window' | 'remote' | 'snapcompact' | 'handoff' | 'soft' | 'shake';
  tokensBefore?: number;
  tokensAfter?: number;
  /** The UIMessage id of the first kept entry: the first UIMessage after this one. */
  firstKeptMessageId?: string;
  /** snapcompact frames attached to this UIMessage as file parts (0 for a text summary). */
  frames: number;
}
export interface AiSdkUiCompactionPart {
  type: 'data-compaction';
  /** The compaction entry's id (the UIMessage's too). */
  id?: string;
  data: AiSdkUiCompactionData;
}

/** A tool approval: asked for (`approved` unset), then answered. */
export interface AiSdkUiApproval {
  id: string;
  descriptor?: unknown;
  requestReason?: string;
  isAutomatic?: boolean;
  signature?: string;
  inputSchemaInput?: unknown;
}
/** An approval the user answered (`reason` is theirs). */
export type AiSdkUiAnsweredApproval<A extends boolean> = AiSdkUiApproval & { approved: A; reason?: string };

interface AiSdkUiToolBase {
  toolCallId: string;
  title?: string;
  toolMetadata?: AiSdkUiJsonObject;
  providerExecuted?: boolean;
  callProviderMetadata?: AiSdkUiProviderMetadata;
}
/** A tool part's call and, once there is one, its output: one state of the SDK's seven. */
export type AiSdkUiToolState = AiSdkUiToolBase &
  (
    | {
        state: 'input-streaming';
        input?: unknown;
        rawInput?: string;
        inputEncoding?: 'json' | 'text';
        approval?: never;
      }
    | { state: 'input-available'; input: unknown; approval?: never }
    | { state: 'approval-requested'; input: unknown; approval: AiSdkUiApproval & { approved?: never; reason?: never } }
    | { state: 'approval-responded'; input: unknown; approval: AiSdkUiAnsweredApproval<boolean> }
    | {
        state: 'output-available';
        input: unknown;
        output: unknown;
        resultProviderMetadata?: AiSdkUiProviderMetadata;
        preliminary?: boolean;
        approval?: AiSdkUiAnsweredApproval<true>;
      }
    | {
        state: 'output-error';
        /** Required by the SDK's type, may be undefined (and absent in JSON). */
        input: unknown;
        rawInput?: unknown;
        errorText: string;
        resultProviderMetadata?: AiSdkUiProviderMetadata;
        approval?: AiSdkUiAnsweredApproval<true>;
      }
    | { state: 'output-denied'; input: unknown; approval: AiSdkUiAnsweredApproval<false> }
  );
/** A static tool's part: `tool-<name>`. */
export type AiSdkUiToolPart = { type: `tool-${string}` } & AiSdkUiToolState;
/** A tool known only at run time (MCP, …). */
export type AiSdkUiDynamicToolPart = { type: 'dynamic-tool'; toolName: string; dynamic?: false } & AiSdkUiToolState;

export type AiSdkUiPart =
  | AiSdkUiTextPart
  | AiSdkUiReasoningPart
  | AiSdkUiFilePart
  | AiSdkUiReasoningFilePart
  | AiSdkUiSourceUrlPart
  | AiSdkUiSourceDocumentPart
  | AiSdkUiCustomPart
  | AiSdkUiSteeringPart
  | AiSdkUiStepStartPart
  | AiSdkUiToolPart
  | AiSdkUiDynamicToolPart
  | AiSdkUiCompactionPart
  | AiSdkUiDataPart;

/** A UIMessage: what `useChat` holds and sends. */
export interface AiSdkUiMessage {
  id: string;
  role: 'system' | 'user' | 'assistant';
  metadata?: unknown;
  parts: AiSdkUiPart[];
}

/**
 * The system prompt: the leading system UIMessages a history starts with (written back first
 * in `messages`), or text (`fromMessages(…, { system })`), written as one system UIMessage.
 */
export type AiSdkUiSystem = AiSdkUiMessage[];
