// Messages of the `gemini` format (being written).
export type GeminiContent = { [key: string]: unknown };
export type GeminiSystem = string;
