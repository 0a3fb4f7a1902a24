//! The keys of a compaction entry's `preserveData` (spec: compaction §1 `compaction` entry,
//! §5.7, §13; snapcompact §2). Each names the record one compaction lane leaves for later
//! requests; the session format owns them, so the lanes that write a record, the context
//! builder that replays it and the next compaction that drops it all spell them from here.

/// The snapcompact archive: frames, text and their counts (spec: snapcompact §2).
pub const SNAPCOMPACT: &str = "snapcompact";
/// The OpenAI Responses replacement history of the `remote` method (spec: compaction §5.7
/// step 1, §13).
pub const OPENAI_REMOTE: &str = "openaiRemoteCompaction";
/// The Anthropic `compaction` block of the `remote` method (spec: compaction §13).
pub const ANTHROPIC: &str = "anthropicCompaction";
