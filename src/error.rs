//! Errors of the core, each with a stable code that crosses the JS boundary unchanged.
