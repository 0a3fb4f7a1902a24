// Messages of the `openai-responses` format (being written).
export type OpenAIResponsesItem = { [key: string]: unknown };
export type OpenAIResponsesSystem = string;
