//! Session model.
