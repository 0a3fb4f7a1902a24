//! JSON scanning.
