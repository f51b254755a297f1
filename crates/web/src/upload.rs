//! Uploading a `config.json`: `POST /upload` takes it as a multipart form (the page's upload
//! control, with the page's other fields) or as a JSON body (the scenario in the query string),
//! checks it with the core's parser, and answers `303 See Other` to the page with the config in
//! the URL (`config=`, base64url of the minified JSON). Nothing is stored: later requests carry
//! the config themselves, and the file never touches the disk.

use crate::error::AppError;
use crate::pages::{self, PageInfo};
use crate::query::PageQuery;
use crate::work::Work;
use crate::AppState;
use axum::body::{Body, Bytes};
use axum::extract::{DefaultBodyLimit, Extension, FromRequest, Multipart, Request, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::post;
use axum::Router;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use llm_ledger_core::model::{parse_config_json, Preset};
use std::sync::Arc;

/// Largest `config.json` accepted, bytes (real ones are under 10 kB).
pub(crate) const MAX_CONFIG_BYTES: usize = 64 * 1024;

/// Largest config once minified, bytes: what travels in the URL (base64url makes it 4/3 larger).
pub(crate) const MAX_MINIFIED_CONFIG_BYTES: usize = 40 * 1024;

/// Largest upload request body: the config plus the page's other form fields.
pub(crate) const MAX_BODY_BYTES: usize = MAX_CONFIG_BYTES + 16 * 1024;

/// The name an uploaded model goes by (in the model list and `model=`).
pub(crate) const UPLOAD_NAME: &str = "uploaded";

/// The form field (and query key) of the page to return to.
pub(crate) const PAGE_KEY: &str = "page";

fn too_large(bytes: usize) -> AppError {
    AppError::bad_request(
        format!(
            "config.json is {bytes} bytes; at most {MAX_CONFIG_BYTES} bytes ({} KiB) are accepted",
            MAX_CONFIG_BYTES / 1024
        ),
        Some(crate::query::CONFIG_KEY),
    )
    .with_status(StatusCode::PAYLOAD_TOO_LARGE)
}

fn body_too_large() -> AppError {
    AppError::bad_request(
        format!(
            "the request body is over {MAX_BODY_BYTES} bytes: a config.json is at most {MAX_CONFIG_BYTES} bytes ({} KiB)",
            MAX_CONFIG_BYTES / 1024
        ),
        Some(crate::query::CONFIG_KEY),
    )
    .with_status(StatusCode::PAYLOAD_TOO_LARGE)
}

/// Check a config with the core's parser and encode it for the URL.
pub(crate) fn encode(text: &str) -> Result<String, AppError> {
    if text.len() > MAX_CONFIG_BYTES {
        return Err(too_large(text.len()));
    }
    preset(text)?;
    let minified = serde_json::from_str::<serde_json::Value>(text)
        .map(|v| v.to_string())
        .map_err(|e| AppError::bad_request(format!("malformed config.json: {e}"), Some(crate::query::CONFIG_KEY)))?;
    if minified.len() > MAX_MINIFIED_CONFIG_BYTES {
        return Err(AppError::bad_request(
            format!(
                "config.json is {} bytes without white space; at most {MAX_MINIFIED_CONFIG_BYTES} fit in a URL",
                minified.len()
            ),
            Some(crate::query::CONFIG_KEY),
        )
        .with_status(StatusCode::PAYLOAD_TOO_LARGE));
    }
    Ok(URL_SAFE_NO_PAD.encode(minified))
}

/// The config text from its URL form.
pub(crate) fn decode(param: &str) -> Result<String, AppError> {
    let field = Some(crate::query::CONFIG_KEY);
    if param.len() > MAX_MINIFIED_CONFIG_BYTES * 4 / 3 + 4 {
        return Err(too_large(param.len() * 3 / 4));
    }
    let bytes = URL_SAFE_NO_PAD
        .decode(param.trim().trim_end_matches('='))
        .map_err(|e| AppError::bad_request(format!("invalid `config`: not base64url ({e})"), field))?;
    String::from_utf8(bytes).map_err(|_| AppError::bad_request("invalid `config`: not UTF-8 text", field))
}

/// The uploaded model as a preset named [`UPLOAD_NAME`].
pub(crate) fn preset(text: &str) -> Result<Preset, AppError> {
    let spec = parse_config_json(text, UPLOAD_NAME).map_err(|e| {
        AppError::bad_request(format!("in the uploaded config.json: {e}"), Some(crate::query::CONFIG_KEY))
    })?;
    let origin = serde_json::from_str::<serde_json::Value>(text)
        .ok()
        .and_then(|v| v.get("_name_or_path").and_then(|n| n.as_str()).map(str::to_string))
        .filter(|n| !n.is_empty() && n.len() <= 200)
        .unwrap_or_else(|| spec.family.clone());
    // Shown on every page and in every report: control characters escaped, as in messages.
    let origin = llm_ledger_core::error::escape_controls(&origin);
    Ok(Preset::unpublished(UPLOAD_NAME.into(), format!("uploaded config.json ({origin})"), spec))
}

/// `POST /upload`.
pub(crate) fn routes() -> Router<Arc<AppState>> {
    Router::new().route("/upload", post(upload).layer(DefaultBodyLimit::max(MAX_BODY_BYTES)))
}

/// The upload's fields: the config's bytes and the other form fields (or the query's pairs).
struct Form {
    pairs: Vec<(String, String)>,
    config: Option<Vec<u8>>,
}

async fn read_form(state: &Arc<AppState>, work: &Work, req: Request) -> Result<Form, AppError> {
    let is_json = req
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    let (parts, body) = req.into_parts();
    let body = read_body(work, &parts.headers, body).await?;
    if is_json {
        let pairs = crate::query::pairs(parts.uri.query().unwrap_or(""))?;
        return Ok(Form { pairs, config: Some(body.to_vec()) });
    }
    // The body is whole and within the limit here: what is left to fail is its form.
    let req = Request::from_parts(parts, Body::from(body));
    let malformed =
        |text: String| AppError::bad_request(format!("cannot read the upload: {text}"), Some(crate::query::CONFIG_KEY));
    let mut mp = Multipart::from_request(req, state).await.map_err(|e| malformed(e.body_text()))?;
    let mut form = Form { pairs: Vec::new(), config: None };
    while let Some(field) = mp.next_field().await.map_err(|e| malformed(e.body_text()))? {
        let name = field.name().unwrap_or("").to_string();
        let bytes = field.bytes().await.map_err(|e| malformed(e.body_text()))?;
        if name == crate::query::CONFIG_KEY {
            form.config = Some(bytes.to_vec());
        } else {
            form.pairs.push((name, String::from_utf8_lossy(&bytes).into_owned()));
        }
    }
    Ok(form)
}

/// A whole request body of at most [`MAX_BODY_BYTES`] (more is 413, the limit named), read on
/// one of the explorer's upload slots within its body deadline ([`Work::read_body`]). Every
/// handler that reads a body reads it here, so there is no body-size layer in front of them with
/// an answer of its own.
pub(crate) async fn read_body(work: &Work, headers: &HeaderMap, body: Body) -> Result<Bytes, AppError> {
    work.read_body(headers, body, MAX_BODY_BYTES, body_too_large).await
}

async fn upload(State(state): State<Arc<AppState>>, Extension(work): Extension<Work>, req: Request) -> Response {
    let fallback = PageQuery::parse(req.uri().query(), &[PAGE_KEY]).unwrap_or_default();
    let form = match read_form(&state, &work, req).await {
        Ok(f) => f,
        Err(e) => return crate::page_routes::error_page(&state, pages::home(), &fallback, e),
    };
    // The page first (a name only matched against the page list), then the fields with its keys.
    let slug = form.pairs.iter().find(|(k, _)| k == PAGE_KEY).map(|(_, v)| v.clone()).unwrap_or_default();
    let page: &'static PageInfo = pages::find(&slug).unwrap_or(pages::home());
    let keys: Vec<&str> = std::iter::once(PAGE_KEY).chain(page.keys.iter().copied()).collect();
    let mut q = match PageQuery::from_pairs(form.pairs, &keys) {
        Ok(q) => q,
        Err(e) => return crate::page_routes::error_page(&state, pages::home(), &fallback, e),
    };
    q.extra.retain(|(k, _)| k != PAGE_KEY);
    // An upload selects the uploaded model.
    q.scenario.retain(|(k, _)| k != "model");
    let accepted = config_text(form.config).and_then(|text| encode(&text)).and_then(|c| {
        let with = PageQuery { config: Some(c), ..q.clone() };
        with.resolve(&state.catalog).map(|_| ())?;
        Ok(with)
    });
    match accepted {
        Ok(with) => Redirect::to(&with.href_page(&page.path(), &[], &[])).into_response(),
        Err(e) => crate::page_routes::error_page(&state, page, &q, e),
    }
}

fn config_text(bytes: Option<Vec<u8>>) -> Result<String, AppError> {
    let field = Some(crate::query::CONFIG_KEY);
    match bytes {
        Some(b) if !b.is_empty() => {
            String::from_utf8(b).map_err(|_| AppError::bad_request("config.json is not UTF-8 text", field))
        }
        _ => Err(AppError::bad_request("no config.json was uploaded (form field `config`)", field)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GPT2: &str = r#"{ "model_type": "gpt2", "n_embd": 768, "n_head": 12, "n_layer": 12, "n_positions": 1024,
        "vocab_size": 50257, "_name_or_path": "gpt2" }"#;

    #[test]
    fn a_config_round_trips_through_the_url_form() {
        let enc = encode(GPT2).unwrap();
        assert!(enc.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'), "{enc}");
        let text = decode(&enc).unwrap();
        assert!(!text.contains("\n "), "minified");
        let p = preset(&text).unwrap();
        assert_eq!(p.name, "uploaded");
        assert_eq!(p.display, "uploaded config.json (gpt2)");
        assert_eq!(p.spec().num_layers(), 12);
    }

    #[test]
    fn bad_configs_get_the_core_message_and_the_config_field() {
        let e = encode("{ \"model_type\": \"llama\" }").unwrap_err();
        assert!(e.message.starts_with("in the uploaded config.json: missing required field"), "{}", e.message);
        assert_eq!(e.field.as_deref(), Some("config"));
        assert!(decode("!!!").unwrap_err().message.contains("not base64url"));
        let big = format!("{{\"pad\": \"{}\"}}", "x".repeat(MAX_CONFIG_BYTES));
        assert_eq!(encode(&big).unwrap_err().status, StatusCode::PAYLOAD_TOO_LARGE);
    }
}
