//! Errors at the web edge: a status, the one-line message (the core's own message wherever the
//! core produced it) and, where known, the query parameter it is about. Pages show them inside the
//! page; the JSON endpoints answer `{"error": {"message", "field"}}`.
//!
//! A message or a field may quote the request: both have their control characters escaped
//! ([`shown`]) however the error is made, so an `ESC` sent in a query never reaches a page raw.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Serialize;

/// A request the explorer cannot answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AppError {
    /// HTTP status (400 for bad input, 413/414 for oversized input, 404 for unknown pages).
    #[serde(skip)]
    pub status: StatusCode,
    /// One line, naming the field and the accepted values.
    pub message: String,
    /// The query parameter or form field the message is about, when there is one.
    pub field: Option<String>,
    /// The answer closes the connection (`Connection: close`): the request's body was not read
    /// to its end, so the connection cannot carry another request.
    #[serde(skip)]
    pub close: bool,
}

impl AppError {
    /// A 400 about `field`.
    pub fn bad_request(message: impl Into<String>, field: Option<&str>) -> Self {
        AppError {
            status: StatusCode::BAD_REQUEST,
            message: shown(&message.into()).into_owned(),
            field: field.map(|f| shown(f).into_owned()),
            close: false,
        }
    }

    /// Another status.
    pub fn with_status(mut self, status: StatusCode) -> Self {
        self.status = status;
        self
    }

    /// The same error, closing the connection.
    pub fn closing(mut self) -> Self {
        self.close = true;
        self
    }

    /// The same error about `field`.
    pub fn with_field(mut self, field: &str) -> Self {
        self.field = Some(shown(field).into_owned());
        self
    }

    /// A core error, about the field the core names ([`llm_ledger_core::Error::field`]): the
    /// query parameter of that name.
    pub fn from_core(e: &llm_ledger_core::Error) -> Self {
        let message = match e {
            llm_ledger_core::Error::NoPlan(refused) => {
                llm_ledger_report::plan::refusal_message(refused, &str::to_string)
            }
            llm_ledger_core::Error::NoServingPlan(refused) => {
                llm_ledger_report::plan_serving::refusal_message(refused, &str::to_string)
            }
            _ => e.to_string(),
        };
        let (message, field) = (shown(&message).into_owned(), e.field().map(|f| shown(f).into_owned()));
        // A non-finite number in a report is the explorer's fault, not the request's.
        let status = match e {
            llm_ledger_core::Error::NonFinite { .. } => StatusCode::INTERNAL_SERVER_ERROR,
            _ => StatusCode::BAD_REQUEST,
        };
        AppError { status, message, field, close: false }
    }
}

/// User text as the explorer shows it, in a page or a message: control characters (`ESC`, the
/// other C0 and C1 controls, `DEL`, bidirectional overrides) written out as `\u{1b}`, the rule of
/// the core's messages, the CLI's and the Python package's
/// ([`llm_ledger_core::error::escape_controls`]).
pub(crate) fn shown(text: &str) -> std::borrow::Cow<'_, str> {
    llm_ledger_core::error::escape_controls(text)
}

impl std::fmt::Display for AppError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for AppError {}

/// The JSON form, for the API.
impl IntoResponse for AppError {
    fn into_response(self) -> Response {
        #[derive(Serialize)]
        struct Body<'a> {
            error: &'a AppError,
        }
        let mut res = (self.status, Json(Body { error: &self })).into_response();
        if self.close {
            res.headers_mut().insert(axum::http::header::CONNECTION, axum::http::HeaderValue::from_static("close"));
        }
        res
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use llm_ledger_core::{Catalog, ScenarioRequest};

    fn err(req: ScenarioRequest, _pairs: &[(&str, &str)]) -> AppError {
        AppError::from_core(&req.resolve(&Catalog::builtin()).unwrap_err())
    }

    #[test]
    fn the_field_is_found_for_every_kind_of_core_error() {
        let e = err(ScenarioRequest { batch: Some("0".into()), ..Default::default() }, &[("batch", "0")]);
        assert_eq!(
            (e.message.as_str(), e.field.as_deref()),
            ("invalid `batch`: 0 (an integer from 1 to 1,073,741,824)", Some("batch"))
        );
        let e = err(
            ScenarioRequest { gpu: Some("h900".into()), ..Default::default() },
            &[("model", "llama-3-8b"), ("gpu", "h900")],
        );
        assert_eq!(e.field.as_deref(), Some("gpu"));
        assert!(e.message.starts_with("unknown GPU `h900`; did you mean `h200`? (23 accepted)"), "{}", e.message);
        let e = err(ScenarioRequest { kv: Some("int3".into()), ..Default::default() }, &[("kv", "int3")]);
        assert_eq!(e.field.as_deref(), Some("kv"));
        let e = err(ScenarioRequest { phase: Some("train".into()), ..Default::default() }, &[("phase", "train")]);
        assert_eq!(e.field.as_deref(), Some("phase"));
    }
}
