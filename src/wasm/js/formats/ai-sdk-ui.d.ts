// Messages of the `ai-sdk-ui` format (being written).
export type AiSdkUiMessage = { [key: string]: unknown };
export type AiSdkUiSystem = string;
