// Messages of the `anthropic` format (being written).
export type AnthropicMessage = { [key: string]: unknown };
export type AnthropicSystem = string;
