//! One module per subcommand; each turns parsed flags into a report string.

pub mod calibrate;
pub mod kv;
pub mod latency;
pub mod ledger;
pub mod list;
pub mod measure;
pub mod moe;
pub mod plan;
pub mod serve;
pub mod serving;
pub mod simulate;
pub mod sweep;
pub mod tile;
pub mod zoom;

pub use serving::scenario;
