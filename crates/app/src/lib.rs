//! The application layer of llm-ledger: one module per command that turns the command's inputs,
//! as text, into its result — its request type (text fields; an unknown key is refused), its
//! input table (name, default, accepted values, help), its resolver and its run. The CLI, the
//! explorer and the Python package are thin adapters over it: each reads its key–value pairs
//! (flags, query keys, keywords) into a request and spells the fields an error names its own way
//! (`--flag`, `?key=`, `keyword=`, [`llm_ledger_core::Error::map_field`]).
//!
//! No I/O: a file an input names (`simulate`'s `trace`, `hist:FILE` lengths) is read through the
//! front end's [`Files`] (the CLI's and Python's read the disk through `llm_ledger_files`; the
//! explorer reads none).
//!
//! | module | command |
//! |---|---|
//! | [`scenario`] | the scenario inputs every command shares (the first input table) |
//! | [`simulate`] | `simulate` |
//! | [`plan`] | `plan` (the static plan, its Pareto front, and the plan under load) |
//! | [`need`] | the explorer's *What do I need* (the fewest GPUs of each kind for a batch × context) |
//! | [`sweep`] | `sweep` (its axes and reserve) |
//! | [`moe`] | `moe` (its batch axis, and E and k without a model) |
//! | [`calibrate`] | `calibrate` (a CSV of measurements, a run's batch, the fit) |
//! | [`zoom`] | `zoom` (its path, the fallback to the deepest level, the INT4 flip) |
//! | [`serving`] | the serving inputs of `kv`, `levers`, `latency` and `cost` (price, reserve, lengths, bound) |

pub mod calibrate;
pub mod moe;
pub mod need;
pub mod plan;
pub mod serving;
pub mod simulate;
pub mod sweep;
pub mod zoom;

/// The scenario inputs every command shares: the core's resolver and its input table.
pub mod scenario {
    pub use llm_ledger_core::scenario::{scenario_inputs, Accepted, ScenarioInput};
    pub use llm_ledger_core::ScenarioRequest;
}

use llm_ledger_core::Error;
use std::path::Path;

/// One input of a command: a field of its request, which is also a flag of the CLI (with `-` for
/// `_`), a query key of the explorer and a Python keyword.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Input {
    /// The field, query key and keyword (the canonical name errors carry).
    pub name: &'static str,
    /// The value used when the input is absent, as the input accepts it; `None` where there is
    /// no default or it depends on other inputs (`accepted` says how).
    pub default: Option<&'static str>,
    /// The values accepted.
    pub accepted: &'static str,
    /// One line on what the input does.
    pub help: &'static str,
    /// Whether the input names a file (a front end that reads no files does not offer it).
    pub file: bool,
}

impl Input {
    /// An input given as text.
    pub const fn text(
        name: &'static str,
        default: Option<&'static str>,
        accepted: &'static str,
        help: &'static str,
    ) -> Input {
        Input { name, default, accepted, help, file: false }
    }

    /// An input that names a file.
    pub const fn file(name: &'static str, accepted: &'static str, help: &'static str) -> Input {
        Input { name, default: None, accepted, help, file: true }
    }
}

/// A front end's reader of text files (a path and what it is, for the message).
pub type ReadText<'a> = &'a dyn Fn(&Path, &str) -> anyhow::Result<String>;

/// How a front end reads the files that inputs name.
#[derive(Clone, Copy)]
pub enum Files<'a> {
    /// Through this reader (the CLI's and Python's: `llm_ledger_files::read_text`).
    Read(ReadText<'a>),
    /// Not at all (the explorer): an input that names a file is refused.
    None,
}

/// Why a command refused its inputs or failed, with the input it is about.
#[derive(Debug)]
pub enum CommandError {
    /// An input refused by the core or by the command: [`Error::field`] names it (canonically;
    /// [`Error::map_field`] spells it).
    Input(Error),
    /// A file an input names could not be read or parsed: the input, and the reader's error (its
    /// message names the file).
    File {
        /// The input that names the file (`trace`, `prompt`).
        field: &'static str,
        /// What went wrong, with the file's name.
        error: anyhow::Error,
    },
    /// Anything else a front end's own step returned (the CLI's step trace to its file).
    Other(anyhow::Error),
}

impl CommandError {
    /// The input the error is about, canonically named.
    pub fn field(&self) -> Option<&str> {
        match self {
            CommandError::Input(e) => e.field(),
            CommandError::File { field, .. } => Some(field),
            CommandError::Other(_) => None,
        }
    }

    /// A front end's error as a command error: a core error alone stays one.
    pub fn from_anyhow(e: anyhow::Error) -> CommandError {
        match e.downcast::<Error>() {
            Ok(core) => CommandError::Input(core),
            Err(other) => CommandError::Other(other),
        }
    }
}

impl std::fmt::Display for CommandError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CommandError::Input(e) => e.fmt(f),
            CommandError::File { error, .. } | CommandError::Other(error) => write!(f, "{error:#}"),
        }
    }
}

impl From<Error> for CommandError {
    fn from(e: Error) -> Self {
        CommandError::Input(e)
    }
}

/// The error as the front ends' `anyhow` chains carry it: a core error alone (its field spelled
/// by the front end), a file's error as its reader gave it.
impl From<CommandError> for anyhow::Error {
    fn from(e: CommandError) -> Self {
        match e {
            CommandError::Input(e) => anyhow::Error::new(e),
            CommandError::File { error, .. } | CommandError::Other(error) => error,
        }
    }
}

/// Checks shared by the modules' tests.
#[cfg(test)]
pub(crate) mod table_checks {
    use crate::Input;
    use llm_ledger_core::pairs::from_pairs;

    /// A request's fields are its input table's names, in its order: serde's refusal of an
    /// unknown key lists the fields it takes, and every name of the table is read.
    pub(crate) fn assert_request_is_table<T: serde::de::DeserializeOwned>(table: &[Input]) -> T {
        let e = from_pairs::<T, _>([("nope", "1")]).err().expect("an unknown key refused").to_string();
        let names: Vec<String> = table.iter().map(|i| format!("`{}`", i.name)).collect();
        assert!(e.contains(&names.join(", ")), "{e}");
        let all: Vec<(&str, &str)> = table.iter().map(|i| (i.name, "1")).collect();
        from_pairs(all).unwrap_or_else(|e| panic!("{e}"))
    }
}
