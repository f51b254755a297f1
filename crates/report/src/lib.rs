//! Views of llm-ledger results, shared by the CLI and the web explorer: human tables, JSON, CSV and
//! Markdown from one report type each. No I/O: every renderer returns a `String`.
#![deny(missing_docs)]

pub mod advise;
pub mod bill;
pub mod calibrate;
pub mod catalog;
pub mod compare;
pub mod cost;
pub mod deployment;
pub mod facts;
pub mod finite;
pub mod fit;
pub mod frontier;
pub mod human;
pub mod kv;
pub mod latency;
pub mod ledger;
pub mod levers;
pub mod measure;
pub mod moe;
pub mod need;
pub mod plan;
pub mod plan_serving;
pub mod plot;
pub mod render;
pub mod simulate;
pub mod sweep;
pub mod tile;
pub mod zoom;

pub use ledger::{Inputs, LedgerReport, RowView};
pub use render::{Format, HumanTable, Report};
pub use tile::TileReport;
pub use zoom::ZoomReport;
