//! Layers around every route: a Host check against DNS rebinding, security headers, a request
//! timeout, a body-size limit, and a last-resort panic guard (which no test ever needs: a panic is a
//! bug, reported as a plain 500).
//!
//! DNS rebinding: a web page on another origin can point its own host name at 127.0.0.1 and read a
//! local server's answers. On loopback the explorer answers only `Host` names that are loopback
//! (`localhost`, `127.0.0.1`, `[::1]`, any port) and refuses the rest with 421; a request without a
//! `Host` (HTTP/1.0, in-process tests) is let through.
//!
//! Headers: a Content-Security-Policy that allows only this server's own script and stylesheet
//! (no inline script or style; plots are inline SVG with presentation attributes, which CSP does
//! not govern), no framing, no referrer, and no MIME sniffing.

use crate::upload::MAX_BODY_BYTES;
use crate::AppState;
use axum::extract::{Request, State};
use axum::http::{header, HeaderName, HeaderValue, StatusCode};
use axum::middleware::Next;
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

/// Whether a `Host` header value names this machine's loopback interface.
pub fn is_loopback_host(host: &str) -> bool {
    let name = match host.strip_prefix('[') {
        Some(rest) => rest.split(']').next().unwrap_or(""),
        None => host
            .rsplit_once(':')
            .map_or(host, |(h, port)| if port.bytes().all(|b| b.is_ascii_digit()) { h } else { host }),
    };
    let name = name.trim_end_matches('.').to_ascii_lowercase();
    name == "localhost"
        || name.ends_with(".localhost")
        || name.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

async fn check_host(State(state): State<Arc<AppState>>, req: Request, next: Next) -> Response {
    if state.loopback_hosts_only {
        if let Some(host) = req.headers().get(header::HOST) {
            let ok = host.to_str().is_ok_and(is_loopback_host);
            if !ok {
                return (
                    StatusCode::MISDIRECTED_REQUEST,
                    "this explorer answers only localhost, 127.0.0.1 or [::1] (it listens on loopback); serve with --bind to expose it",
                )
                    .into_response();
            }
        }
    }
    next.run(req).await
}

/// Wrap the routes in the layers.
pub fn layers(router: Router<Arc<AppState>>, state: Arc<AppState>) -> Router<Arc<AppState>> {
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
        .layer(CatchPanicLayer::custom(panic_response))
        .layer(axum::middleware::from_fn_with_state(state, check_host));
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

#[cfg(test)]
mod tests {
    use super::is_loopback_host;

    #[test]
    fn loopback_hosts() {
        for ok in [
            "localhost",
            "localhost:8765",
            "127.0.0.1:8765",
            "127.0.0.2",
            "[::1]:8765",
            "[::1]",
            "LOCALHOST.",
            "app.localhost:80",
        ] {
            assert!(is_loopback_host(ok), "{ok}");
        }
        for bad in
            ["evil.example", "evil.example:8765", "192.168.1.5:8765", "127.0.0.1.evil.example", "[2001:db8::1]:80", ""]
        {
            assert!(!is_loopback_host(bad), "{bad}");
        }
    }
}
