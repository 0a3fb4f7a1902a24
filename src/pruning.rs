//! Tool-output pruning (spec: compaction §6). Work in progress.
