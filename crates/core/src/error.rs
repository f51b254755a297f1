//! Typed errors of the core. Every variant renders as one line that names the offending field or
//! input and, where there is a closed set, the accepted values.

use thiserror::Error;

/// Result alias used throughout the core.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong when turning user input into a ledger.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum Error {
    /// A field holds a value of the wrong type or out of range.
    #[error("invalid `{field}`: {value} ({expected})")]
    InvalidField {
        /// Field name as the user wrote it (config key, flag or query parameter).
        field: String,
        /// The offending value, rendered for the message.
        value: String,
        /// What would have been accepted.
        expected: String,
    },
    /// A field that the model family needs is absent.
    #[error("missing required field `{field}` for {context}")]
    MissingField {
        /// Field name.
        field: String,
        /// Where it was needed (e.g. "model_type llama").
        context: String,
    },
    /// A name that is not in a closed set (GPU, preset, precision, family …).
    #[error("unknown {what} `{name}`; accepted: {accepted}")]
    UnknownName {
        /// What kind of name it is ("GPU", "model", "precision" …).
        what: String,
        /// The name given.
        name: String,
        /// Comma-separated accepted values.
        accepted: String,
    },
    /// The input text is not valid JSON/TOML.
    #[error("malformed {what}: {message}")]
    Malformed {
        /// What was being parsed ("config.json", "GPU file" …).
        what: String,
        /// The parser's message, with line and column where known.
        message: String,
    },
    /// The input is structurally fine but describes something this tool does not model.
    #[error("unsupported {what}: {reason}")]
    Unsupported {
        /// What is unsupported.
        what: String,
        /// Why, and what is supported instead.
        reason: String,
    },
}

impl Error {
    /// Shorthand for [`Error::InvalidField`].
    pub fn invalid(field: impl Into<String>, value: impl ToString, expected: impl Into<String>) -> Self {
        Error::InvalidField { field: field.into(), value: value.to_string(), expected: expected.into() }
    }

    /// Shorthand for [`Error::UnknownName`], joining the accepted names with ", ".
    pub fn unknown<S: AsRef<str>>(
        what: impl Into<String>,
        name: impl Into<String>,
        accepted: impl IntoIterator<Item = S>,
    ) -> Self {
        let accepted: Vec<String> = accepted.into_iter().map(|s| s.as_ref().to_string()).collect();
        Error::UnknownName { what: what.into(), name: name.into(), accepted: accepted.join(", ") }
    }

    /// A TOML parse error as one line: the parser's message and the line it points at.
    pub fn toml(what: &str, text: &str, e: &toml::de::Error) -> Self {
        let line = e.span().map(|s| text[..s.start.min(text.len())].lines().count().max(1));
        let message = e.message().split_whitespace().collect::<Vec<_>>().join(" ");
        Error::Malformed {
            what: what.into(),
            message: match line {
                Some(l) => format!("{message} (line {l})"),
                None => message,
            },
        }
    }

    /// The field or input the error is about, when it names one (used by the web front end).
    pub fn field(&self) -> Option<&str> {
        match self {
            Error::InvalidField { field, .. } | Error::MissingField { field, .. } => Some(field),
            _ => None,
        }
    }
}
