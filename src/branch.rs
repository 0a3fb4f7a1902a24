//! Branch summaries and tree navigation (spec: compaction §7). Work in progress.
