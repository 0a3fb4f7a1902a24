// Messages of the `ai-sdk-model` format (being written).
export type AiSdkModelMessage = { [key: string]: unknown };
export type AiSdkModelSystem = string;
