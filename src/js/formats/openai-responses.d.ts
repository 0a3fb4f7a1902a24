// Items of the `openai-responses` format: the `input` array of an OpenAI Responses API request
// (`POST /v1/responses`), as the API reference documents its input items. Members an item or
// part carries beyond these are kept and written back as they were; the hosted-tool items are
// typed loosely (their type and id) and kept whole.

export interface ResponsesInputText {
  type: 'input_text';
  text: string;
}
/** An image as a URL (a `data:<mime>;base64,…` URL is a base64 image for pi) or an uploaded file's id. */
export interface ResponsesInputImage {
  type: 'input_image';
  detail?: 'auto' | 'low' | 'high' | 'original' | null;
  image_url?: string | null;
  file_id?: string | null;
}
export interface ResponsesInputFile {
  type: 'input_file';
  file_data?: string | null;
  file_id?: string | null;
  file_url?: string | null;
  filename?: string | null;
}
export type ResponsesInputPart = ResponsesInputText | ResponsesInputImage | ResponsesInputFile;

export interface ResponsesOutputText {
  type: 'output_text';
  text: string;
  annotations?: Array<Record<string, unknown>>;
  logprobs?: Array<Record<string, unknown>>;
}
export interface ResponsesRefusal {
  type: 'refusal';
  refusal: string;
}

/** A user, system or developer message (`type` may be left out: the easy-input form). */
export interface ResponsesInputMessage {
  type?: 'message';
  role: 'user' | 'system' | 'developer';
  content: string | ResponsesInputPart[];
  id?: string;
  status?: 'in_progress' | 'completed' | 'incomplete';
  [member: string]: unknown;
}
/** A message of the model: its output text and refusals (or a string, in the easy-input form). */
export interface ResponsesOutputMessage {
  type?: 'message';
  role: 'assistant';
  content: string | Array<ResponsesOutputText | ResponsesRefusal>;
  id?: string;
  status?: 'in_progress' | 'completed' | 'incomplete';
  phase?: 'commentary' | 'final_answer' | null;
  [member: string]: unknown;
}
/** Reasoning to send back: its summary, and its `encrypted_content` when the request is stateless. */
export interface ResponsesReasoningItem {
  type: 'reasoning';
  id?: string;
  summary?: Array<{ type: 'summary_text'; text: string }>;
  content?: Array<{ type: 'reasoning_text'; text: string }>;
  encrypted_content?: string | null;
  status?: 'in_progress' | 'completed' | 'incomplete';
  [member: string]: unknown;
}
export interface ResponsesFunctionCall {
  type: 'function_call';
  id?: string;
  call_id: string;
  name: string;
  /** JSON text, kept as it was when it does not re-stringify the same. */
  arguments: string;
  status?: 'in_progress' | 'completed' | 'incomplete';
  [member: string]: unknown;
}
export interface ResponsesFunctionCallOutput {
  type: 'function_call_output';
  id?: string;
  call_id: string;
  output: string | ResponsesInputPart[];
  status?: 'in_progress' | 'completed' | 'incomplete';
  [member: string]: unknown;
}
export interface ResponsesCustomToolCall {
  type: 'custom_tool_call';
  id?: string;
  call_id: string;
  name: string;
  input: string;
  [member: string]: unknown;
}
export interface ResponsesCustomToolCallOutput {
  type: 'custom_tool_call_output';
  id?: string;
  call_id: string;
  output: string | ResponsesInputPart[];
  [member: string]: unknown;
}
/** An item stored by the API, by its id. */
export interface ResponsesItemReference {
  type: 'item_reference';
  id: string;
}
/** The opaque item `/responses/compact` returns in place of the history it compacted. */
export interface ResponsesCompactionItem {
  type: 'compaction';
  id?: string;
  encrypted_content: string;
  [member: string]: unknown;
}
/** Hosted tools' calls and outputs: kept whole (pi has no message for them). */
export interface ResponsesHostedToolItem {
  type:
    | 'web_search_call'
    | 'file_search_call'
    | 'computer_call'
    | 'computer_call_output'
    | 'image_generation_call'
    | 'code_interpreter_call'
    | 'local_shell_call'
    | 'local_shell_call_output'
    | 'shell_call'
    | 'shell_call_output'
    | 'apply_patch_call'
    | 'apply_patch_call_output'
    | 'mcp_list_tools'
    | 'mcp_approval_request'
    | 'mcp_approval_response'
    | 'mcp_call'
    | 'tool_search_call'
    | 'tool_search_output';
  id?: string | null;
  call_id?: string;
  [member: string]: unknown;
}

export type ResponsesInputItem =
  | ResponsesInputMessage
  | ResponsesOutputMessage
  | ResponsesReasoningItem
  | ResponsesFunctionCall
  | ResponsesFunctionCallOutput
  | ResponsesCustomToolCall
  | ResponsesCustomToolCallOutput
  | ResponsesItemReference
  | ResponsesCompactionItem
  | ResponsesHostedToolItem;

/**
 * The request's `instructions`: the system prompt given as an option, and what `toMessages`
 * returns as `system`. (Leading system and developer items of an input are the system prompt
 * too: they are kept and written back first, as they were.)
 */
export type ResponsesSystem = string;
