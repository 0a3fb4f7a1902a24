// Messages of the `openai-chat` format (being written).
export type OpenAIChatMessage = { [key: string]: unknown };
export type OpenAIChatSystem = string;
