//! Layers around every route: security headers, a request timeout, a body-size limit, and a
//! last-resort panic guard (which no test ever needs: a panic is a bug, reported as a plain 500).
//!
//! Headers: a Content-Security-Policy that allows only this server's own script and stylesheet
//! (no inline script or style; plots are inline SVG with presentation attributes, which CSP does
//! not govern), no framing, no referrer, and no MIME sniffing.

use crate::upload::MAX_BODY_BYTES;
use crate::AppState;
use axum::http::{header, HeaderName, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Router;
use std::any::Any;
use std::sync::Arc;
use std::time::Duration;
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::limit::RequestBodyLimitLayer;
use tower_http::set_header::SetResponseHeaderLayer;
use tower_http::timeout::TimeoutLayer;

/// The Content-Security-Policy of every response.
pub const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'";

/// The policy of a standalone SVG document: its own `<style>` element and nothing else.
pub const SVG_CSP: &str = "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'";

/// How long one request may take before it is answered 408.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

/// Wrap the routes in the layers.
pub fn layers(router: Router<Arc<AppState>>) -> Router<Arc<AppState>> {
    let headers: [(HeaderName, &'static str); 6] = [
        (header::CONTENT_SECURITY_POLICY, CSP),
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        (header::REFERRER_POLICY, "no-referrer"),
        (header::X_FRAME_OPTIONS, "DENY"),
        (HeaderName::from_static("cross-origin-opener-policy"), "same-origin"),
        (HeaderName::from_static("cross-origin-resource-policy"), "same-origin"),
    ];
    let mut router = router
        .layer(RequestBodyLimitLayer::new(MAX_BODY_BYTES))
        .layer(TimeoutLayer::with_status_code(StatusCode::REQUEST_TIMEOUT, REQUEST_TIMEOUT))
        .layer(CatchPanicLayer::custom(panic_response));
    for (name, value) in headers {
        // A route may set its own policy (the standalone SVG needs its <style>); the rest are fixed.
        let value = HeaderValue::from_static(value);
        router = if name == header::CONTENT_SECURITY_POLICY {
            router.layer(SetResponseHeaderLayer::if_not_present(name, value))
        } else {
            router.layer(SetResponseHeaderLayer::overriding(name, value))
        };
    }
    router
}

fn panic_response(_: Box<dyn Any + Send + 'static>) -> Response {
    (StatusCode::INTERNAL_SERVER_ERROR, "internal error: this is a bug in llm-ledger; please report the URL")
        .into_response()
}
