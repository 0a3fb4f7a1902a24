//! Serializing messages for the summarizer and assembling its prompts (spec: compaction §5.1–§5.5).
