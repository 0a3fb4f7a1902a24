// Types of the message formats (Session.fromMessages, appendMessages, toMessages). The
// messages of each format are typed in its module (formats/<format>.ts), from the providers'
// documented shapes; docs/guide/formats.md says what maps to what. A module in TypeScript
// exports values too (`name`, `read`, `write`), so its message types are re-exported by name.

import type { AgentMessage, ContextOptions, CreateOptions, LlmMessage } from '../core/session.js';
import type { AiSdkModelMessage, AiSdkModelSystem } from './ai-sdk-model.js';
import type { AiSdkUiMessage, AiSdkUiSystem } from './ai-sdk-ui.js';
import type { AnthropicMessage, AnthropicSystem } from './anthropic.js';
import type { FormatModel, FormatWarning } from './common.js';
import type { GeminiContent, GeminiSystem } from './gemini.js';
import type { OpenAIChatMessage, OpenAIChatSystem } from './openai-chat.js';
import type { ResponsesInputItem, ResponsesSystem } from './openai-responses.js';

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
  AnthropicAssistantMessage,
  AnthropicCacheControl,
  AnthropicCompactionBlock,
  AnthropicContainerUploadBlock,
  AnthropicDocumentBlock,
  AnthropicImageBlock,
  AnthropicImageSource,
  AnthropicMessage,
  AnthropicRedactedThinkingBlock,
  AnthropicSearchResultBlock,
  AnthropicServerToolBlock,
  AnthropicSystem,
  AnthropicSystemMessage,
  AnthropicTextBlock,
  AnthropicThinkingBlock,
  AnthropicToolChangeBlock,
  AnthropicToolResultBlock,
  AnthropicToolUseBlock,
  AnthropicUserBlock,
  AnthropicUserMessage,
} from './anthropic.js';
export type { FormatModel, FormatWarning } from './common.js';
export type {
  GeminiBlob,
  GeminiCodeExecutionResult,
  GeminiContent,
  GeminiExecutableCode,
  GeminiFileData,
  GeminiFunctionCall,
  GeminiFunctionResponse,
  GeminiFunctionResponsePart,
  GeminiPart,
  GeminiSystem,
} from './gemini.js';
export type {
  OpenAIChatAssistantMessage,
  OpenAIChatAudioPart,
  OpenAIChatCacheBreakpoint,
  OpenAIChatCustomToolCall,
  OpenAIChatFilePart,
  OpenAIChatFunctionMessage,
  OpenAIChatFunctionToolCall,
  OpenAIChatImagePart,
  OpenAIChatMessage,
  OpenAIChatRefusalPart,
  OpenAIChatSystem,
  OpenAIChatSystemMessage,
  OpenAIChatTextPart,
  OpenAIChatToolCall,
  OpenAIChatToolMessage,
  OpenAIChatUserMessage,
  OpenAIChatUserPart,
} from './openai-chat.js';
export type {
  ResponsesCompactionItem,
  ResponsesCustomToolCall,
  ResponsesCustomToolCallOutput,
  ResponsesFunctionCall,
  ResponsesFunctionCallOutput,
  ResponsesHostedToolItem,
  ResponsesInputFile,
  ResponsesInputImage,
  ResponsesInputItem,
  ResponsesInputMessage,
  ResponsesInputPart,
  ResponsesInputText,
  ResponsesItemReference,
  ResponsesOutputMessage,
  ResponsesOutputText,
  ResponsesReasoningItem,
  ResponsesRefusal,
  ResponsesSystem,
} from './openai-responses.js';

/** The message formats: `pi` is oh-my-pi's own (`AgentMessage` in, `LlmMessage` out). */
export type MessageFormat = keyof FormatMessages;

/** What each format's messages are, in (`fromMessages`, `appendMessages`) and out (`toMessages`). */
export interface FormatMessages {
  pi: { in: AgentMessage; out: LlmMessage; system: string };
  'openai-chat': { in: OpenAIChatMessage; out: OpenAIChatMessage; system: OpenAIChatSystem };
  'openai-responses': { in: ResponsesInputItem; out: ResponsesInputItem; system: ResponsesSystem };
  anthropic: { in: AnthropicMessage; out: AnthropicMessage; system: AnthropicSystem };
  'ai-sdk-model': { in: AiSdkModelMessage; out: AiSdkModelMessage; system: AiSdkModelSystem };
  'ai-sdk-ui': { in: AiSdkUiMessage; out: AiSdkUiMessage; system: AiSdkUiSystem };
  gemini: { in: GeminiContent; out: GeminiContent; system: GeminiSystem };
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
  system?: FormatMessages[F]['system'];
  warnings: FormatWarning[];
}
