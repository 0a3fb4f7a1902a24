//! Frame shapes. The geometry: the catalogue of fonts, inks and grids ([`catalogue`]). The
//! vision side, on top of it: the reader model and its billing family ([`reader`]), what
//! frames cost per provider ([`billing`]) and the choice of a shape for a reader and a text
//! ([`resolve`]) (spec: snapcompact §3–§6).

pub mod billing;
pub mod catalogue;
pub mod reader;
pub mod resolve;
