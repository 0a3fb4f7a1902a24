//! Text before pixels: messages → transcript ([`serialize`]), data-URL elision
//! ([`dataurl`]), one drawable line ([`normalize`], [`unicode`]), stopword dimming
//! ([`stopwords`]), cells and wrapping ([`cells`], [`wrap`]) and page strings
//! ([`paginate`]) (spec: snapcompact §2, §7.1–§7.4, §8).

pub mod cells;
pub mod dataurl;
pub mod normalize;
pub mod paginate;
pub mod serialize;
pub mod stopwords;
pub mod unicode;
mod unicode_tables;
pub mod wrap;
