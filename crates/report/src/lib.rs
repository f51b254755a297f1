//! Views of llm-ledger results, shared by the CLI and the web explorer: human tables, JSON, CSV and
//! Markdown from one report type each. No I/O: every renderer returns a `String`.
#![deny(missing_docs)]

pub mod catalog;
pub mod human;
pub mod ledger;
pub mod plot;
pub mod render;

pub use ledger::{Inputs, LedgerReport, RowView};
pub use render::{Format, HumanTable, Report};
