// Messages of the `openai-chat` format: OpenAI Chat Completions request `messages`, as the API
// documents them (the reader also takes the legacy `function` role and `function_call`).
type JsonObject = { [key: string]: unknown };

export interface OpenAIChatTextPart {
  type: 'text';
  text: string;
}
export interface OpenAIChatImagePart {
  type: 'image_url';
  image_url: string | { url: string; detail?: 'auto' | 'low' | 'high' };
}
export interface OpenAIChatAudioPart {
  type: 'input_audio';
  input_audio: { data: string; format: string };
}
export interface OpenAIChatFilePart {
  type: 'file';
  file: { file_data?: string; file_id?: string; filename?: string };
}
export interface OpenAIChatRefusalPart {
  type: 'refusal';
  refusal: string;
}
export interface OpenAIChatToolCall {
  id: string;
  type: 'function';
  /** `arguments` is JSON text. */
  function: { name: string; arguments: string };
}

export type OpenAIChatMessage =
  | { role: 'system' | 'developer'; content: string | OpenAIChatTextPart[]; name?: string }
  | {
      role: 'user';
      content: string | Array<OpenAIChatTextPart | OpenAIChatImagePart | OpenAIChatAudioPart | OpenAIChatFilePart>;
      name?: string;
    }
  | {
      role: 'assistant';
      content?: string | Array<OpenAIChatTextPart | OpenAIChatRefusalPart> | null;
      /** DeepSeek / Kimi: the reasoning to replay. */
      reasoning_content?: string | null;
      refusal?: string | null;
      tool_calls?: OpenAIChatToolCall[] | null;
      function_call?: { name: string; arguments: string } | null;
      audio?: JsonObject | null;
      name?: string;
    }
  | { role: 'tool'; tool_call_id: string; content: string | OpenAIChatTextPart[] }
  | { role: 'function'; name: string; content: string | null };

/** The system prompt: text, or the leading system/developer messages as read. */
export type OpenAIChatSystem = string;
