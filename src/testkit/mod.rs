//! Test kit: deterministic session generator.
