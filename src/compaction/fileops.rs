//! File-operation tracking and the `<files>` block (spec: compaction §5.10).
