//! Frame shapes: the catalogue of fonts, inks and grids ([`catalogue`]), the choice of a
//! shape for a model and a text ([`resolve`]), and what frames cost per provider
//! ([`billing`]) (spec: snapcompact §3–§6).

pub mod billing;
pub mod catalogue;
pub mod resolve;
