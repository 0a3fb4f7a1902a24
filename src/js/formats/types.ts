// Types of the message formats (Session.fromMessages, appendMessages, toMessages). The
// messages of each format are typed in its module (formats/<format>.ts), from the providers'
// documented shapes; docs/guide/formats.md says what maps to what. A module in TypeScript
// exports values too (`name`, `read`, `write`), so its message types are re-exported by name.

import type { AgentMessage, ContextOptions, CreateOptions, LlmMessage } from '../core/session.js';
import type { AiSdkModelMessage, AiSdkModelSystem } from './ai-sdk-model.js';
import type { AiSdkUiMessage, AiSdkUiSystem } from './ai-sdk-ui.js';
import type { AnthropicMessage, AnthropicMessageOut, AnthropicSystem, AnthropicSystemOut } from './anthropic.js';
import type { FormatModel, FormatWarning } from './common.js';
import type { GeminiContent, GeminiContentOut, GeminiSystem } from './gemini.js';
import type { OpenAIChatMessage, OpenAIChatMessageOut, OpenAIChatSystem } from './openai-chat.js';
import type { ResponsesInputItem, ResponsesInputItemOut, ResponsesSystem } from './openai-responses.js';

export type {
  AiSdkModelAssistantMessage,
  AiSdkModelCustomPart,
  AiSdkModelDataContent,
  AiSdkModelFileData,
  AiSdkModelFilePart,
  AiSdkModelImagePart,
  AiSdkModelJsonObject,
  AiSdkModelJsonValue,
  AiSdkModelMessage,
  AiSdkModelProviderOptions,
  AiSdkModelProviderReference,
  AiSdkModelReasoningFilePart,
  AiSdkModelReasoningPart,
  AiSdkModelSystem,
  AiSdkModelSystemMessage,
  AiSdkModelTextPart,
  AiSdkModelToolApprovalRequest,
  AiSdkModelToolApprovalResponse,
  AiSdkModelToolCallPart,
  AiSdkModelToolContentItem,
  AiSdkModelToolMessage,
  AiSdkModelToolResultOutput,
  AiSdkModelToolResultPart,
  AiSdkModelUrl,
  AiSdkModelUserMessage,
} from './ai-sdk-model.js';
export type {
  AiSdkUiAnsweredApproval,
  AiSdkUiApproval,
  AiSdkUiCitation,
  AiSdkUiCompactionData,
  AiSdkUiCompactionPart,
  AiSdkUiCustomPart,
  AiSdkUiDataPart,
  AiSdkUiDynamicToolPart,
  AiSdkUiFilePart,
  AiSdkUiJsonObject,
  AiSdkUiJsonValue,
  AiSdkUiMessage,
  AiSdkUiPart,
  AiSdkUiProviderMetadata,
  AiSdkUiReasoningFilePart,
  AiSdkUiReasoningPart,
  AiSdkUiSourceDocumentPart,
  AiSdkUiSourceUrlPart,
  AiSdkUiSteeringPart,
  AiSdkUiStepStartPart,
  AiSdkUiSystem,
  AiSdkUiTextPart,
  AiSdkUiToolPart,
  AiSdkUiToolState,
} from './ai-sdk-ui.js';
export type {
  AnthropicAssistantBlock,
  AnthropicAssistantBlockOut,
  AnthropicAssistantMessage,
  AnthropicAssistantMessageOut,
  AnthropicCacheControl,
  AnthropicCompactionBlock,
  AnthropicContainerUploadBlock,
  AnthropicDocumentBlock,
  AnthropicDocumentBlockOut,
  AnthropicImageBlock,
  AnthropicImageBlockOut,
  AnthropicImageSource,
  AnthropicImageSourceOut,
  AnthropicMessage,
  AnthropicMessageOut,
  AnthropicRedactedThinkingBlock,
  AnthropicSearchResultBlock,
  AnthropicSearchResultBlockOut,
  AnthropicServerToolBlock,
  AnthropicSystem,
  AnthropicSystemMessage,
  AnthropicSystemMessageOut,
  AnthropicSystemOut,
  AnthropicTextBlock,
  AnthropicTextBlockOut,
  AnthropicThinkingBlock,
  AnthropicToolChangeBlock,
  AnthropicToolResultBlock,
  AnthropicToolResultBlockOut,
  AnthropicToolUseBlock,
  AnthropicUserBlock,
  AnthropicUserBlockOut,
  AnthropicUserMessage,
  AnthropicUserMessageOut,
} from './anthropic.js';
export type { FormatModel, FormatWarning } from './common.js';
export type {
  GeminiBlob,
  GeminiCodeExecutionResult,
  GeminiContent,
  GeminiContentOut,
  GeminiExecutableCode,
  GeminiFileData,
  GeminiFunctionCall,
  GeminiFunctionResponse,
  GeminiFunctionResponseOut,
  GeminiFunctionResponsePart,
  GeminiPart,
  GeminiPartOut,
  GeminiSystem,
} from './gemini.js';
export type {
  OpenAIChatAssistantMessage,
  OpenAIChatAssistantMessageOut,
  OpenAIChatAudioPart,
  OpenAIChatAudioPartOut,
  OpenAIChatCacheBreakpoint,
  OpenAIChatCustomToolCall,
  OpenAIChatFilePart,
  OpenAIChatFunctionMessage,
  OpenAIChatFunctionMessageOut,
  OpenAIChatFunctionToolCall,
  OpenAIChatImagePart,
  OpenAIChatImagePartOut,
  OpenAIChatMessage,
  OpenAIChatMessageOut,
  OpenAIChatRefusalPart,
  OpenAIChatSystem,
  OpenAIChatSystemMessage,
  OpenAIChatSystemMessageOut,
  OpenAIChatTextPart,
  OpenAIChatTextPartOut,
  OpenAIChatToolCall,
  OpenAIChatToolMessage,
  OpenAIChatToolMessageOut,
  OpenAIChatUserMessage,
  OpenAIChatUserMessageOut,
  OpenAIChatUserPart,
  OpenAIChatUserPartOut,
} from './openai-chat.js';
export type {
  ResponsesCompactionItem,
  ResponsesCompactionItemOut,
  ResponsesCustomToolCall,
  ResponsesCustomToolCallOut,
  ResponsesCustomToolCallOutput,
  ResponsesCustomToolCallOutputOut,
  ResponsesFunctionCall,
  ResponsesFunctionCallOut,
  ResponsesFunctionCallOutput,
  ResponsesFunctionCallOutputOut,
  ResponsesHostedToolItem,
  ResponsesInputFile,
  ResponsesInputFileOut,
  ResponsesInputImage,
  ResponsesInputImageOut,
  ResponsesInputItem,
  ResponsesInputItemOut,
  ResponsesInputMessage,
  ResponsesInputMessageOut,
  ResponsesInputPart,
  ResponsesInputPartOut,
  ResponsesInputText,
  ResponsesItemReference,
  ResponsesOutputMessage,
  ResponsesOutputMessageOut,
  ResponsesOutputText,
  ResponsesOutputTextOut,
  ResponsesReasoningItem,
  ResponsesReasoningItemOut,
  ResponsesRefusal,
  ResponsesSystem,
} from './openai-responses.js';

/** The message formats: `pi` is oh-my-pi's own (`AgentMessage` in, `LlmMessage` out). */
export type MessageFormat = keyof FormatMessages;

/**
 * What each format's messages are, in (`fromMessages`, `appendMessages`: what ctxfold reads, as
 * wide as the provider documents) and out (`toMessages`, `beforeRequest`: what ctxfold writes,
 * typed so that the provider's SDK takes it with no cast); `system` is the system prompt given
 * as an option, `systemOut` the one written apart from the messages.
 */
export interface FormatMessages {
  pi: { in: AgentMessage; out: LlmMessage; system: string; systemOut: string };
  'openai-chat': {
    in: OpenAIChatMessage;
    out: OpenAIChatMessageOut;
    system: OpenAIChatSystem;
    systemOut: OpenAIChatSystem;
  };
  'openai-responses': {
    in: ResponsesInputItem;
    out: ResponsesInputItemOut;
    system: ResponsesSystem;
    systemOut: ResponsesSystem;
  };
  anthropic: { in: AnthropicMessage; out: AnthropicMessageOut; system: AnthropicSystem; systemOut: AnthropicSystemOut };
  'ai-sdk-model': {
    in: AiSdkModelMessage;
    out: AiSdkModelMessage;
    system: AiSdkModelSystem;
    systemOut: AiSdkModelSystem;
  };
  'ai-sdk-ui': { in: AiSdkUiMessage; out: AiSdkUiMessage; system: AiSdkUiSystem; systemOut: AiSdkUiSystem };
  // What is written reads back: a written code-execution result's `outcome` is not declared
  // (see GeminiContentOut), so the written type is taken here too.
  gemini: {
    in: GeminiContent | GeminiContentOut;
    out: GeminiContentOut;
    system: GeminiSystem;
    systemOut: GeminiSystem;
  };
}

export interface AppendMessagesOptions<F extends MessageFormat = MessageFormat> {
  /** Default `pi`. */
  format?: F;
  /** The system prompt to keep with the history (the format's form, or text). */
  system?: FormatMessages[F]['system'] | string;
  model?: FormatModel;
  /** Entry timestamps in ms (default: Date.now()). */
  now?: number;
}

export interface FromMessagesOptions<F extends MessageFormat = MessageFormat>
  extends AppendMessagesOptions<F>,
    Omit<CreateOptions, 'now'> {}

export interface AppendMessagesResult {
  /** The new entries, in order (the system prompt's first when there is one). */
  ids: string[];
  warnings: FormatWarning[];
}

export interface ToMessagesOptions<F extends MessageFormat = MessageFormat>
  extends Omit<ContextOptions, 'transcript' | 'collapseCompactedHistory' | 'keepDanglingToolCalls'> {
  /** Default `pi`. */
  format?: F;
  /** The system prompt to send (default: the one the session keeps). */
  system?: FormatMessages[F]['system'] | string;
}

export interface ToMessagesResult<F extends MessageFormat = MessageFormat> {
  /** Ready for the request body (`messages`, `input`, `contents`, …; docs/guide/formats.md). */
  messages: Array<FormatMessages[F]['out']>;
  /** The system prompt where the format keeps it apart from the messages. */
  system?: FormatMessages[F]['systemOut'];
  warnings: FormatWarning[];
}
