//! One module per subcommand; each turns parsed flags into a report string.

pub mod ledger;
pub mod list;
pub mod serve;
