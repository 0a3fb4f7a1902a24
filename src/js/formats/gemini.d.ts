// Messages of the `gemini` format: the `contents` and `systemInstruction` of a Gemini API
// `generateContent` request, from Google's documented shapes (the `Content` and `Part`
// resources). docs/guide/formats.md says what maps to what.
import type { JsonObject } from '../core/session.js';

/** Bytes given in the request: base64 `data` of a MIME type. */
export interface GeminiBlob {
  mimeType: string;
  data: string;
  displayName?: string;
}

/** Data by URI (an uploaded file or a URL). */
export interface GeminiFileData {
  fileUri: string;
  mimeType?: string;
  displayName?: string;
}

/** A call the model asks for; `id` may be missing (then it pairs with its response by name and order). */
export interface GeminiFunctionCall {
  id?: string;
  name: string;
  args?: JsonObject;
}

/** A part inside a function response (Gemini 3: images of a tool result). */
export interface GeminiFunctionResponsePart {
  inlineData?: GeminiBlob;
  fileData?: GeminiFileData;
}

/** The result of a call: `{ output }` or `{ error }` by convention, any JSON object otherwise. */
export interface GeminiFunctionResponse {
  id?: string;
  name: string;
  response: JsonObject;
  parts?: GeminiFunctionResponsePart[];
  willContinue?: boolean;
  scheduling?: 'SCHEDULING_UNSPECIFIED' | 'SILENT' | 'WHEN_IDLE' | 'INTERRUPT';
}

/** Code the model wrote for the code-execution tool. */
export interface GeminiExecutableCode {
  language: 'LANGUAGE_UNSPECIFIED' | 'PYTHON';
  code: string;
}

/** What running that code gave. */
export interface GeminiCodeExecutionResult {
  outcome: 'OUTCOME_UNSPECIFIED' | 'OUTCOME_OK' | 'OUTCOME_FAILED' | 'OUTCOME_DEADLINE_EXCEEDED';
  output?: string;
}

/** What every part may carry beside its one kind of data. */
interface GeminiPartBase {
  /** The part is a thought summary. */
  thought?: boolean;
  /** Opaque base64; replayed byte for byte to the model that made it. */
  thoughtSignature?: string;
  videoMetadata?: { startOffset?: string; endOffset?: string; fps?: number };
  partMetadata?: JsonObject;
  mediaResolution?: JsonObject;
}

export type GeminiPart = GeminiPartBase &
  (
    | { text: string }
    | { inlineData: GeminiBlob }
    | { fileData: GeminiFileData }
    | { functionCall: GeminiFunctionCall }
    | { functionResponse: GeminiFunctionResponse }
    | { executableCode: GeminiExecutableCode }
    | { codeExecutionResult: GeminiCodeExecutionResult }
  );

/** An element of the request's `contents`; a missing `role` reads as `user`. */
export interface GeminiContent {
  role?: 'user' | 'model';
  parts?: GeminiPart[];
}

/** The request's `systemInstruction`: a content of text parts. */
export interface GeminiSystem {
  role?: 'user';
  parts: Array<{ text: string }>;
}
