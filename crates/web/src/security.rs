//! Layers around every route: a Host check against DNS rebinding, security headers, a cache of
//! recent answers ([`crate::cache`]), a request deadline ([`crate::work`]), compression (gzip or brotli, as the client's `Accept-Encoding`
//! asks, at the fastest level of each: pages of tables and inline SVG shrink 4–12×, the GEMM
//! tiling page from 386 kB to 32 kB with brotli), and a last-resort panic guard (which no test
//! ever needs: a panic is a bug, reported as a plain 500).
//!
//! DNS rebinding: a web page on another origin can point its own host name at 127.0.0.1 and read a
//! local server's answers. On loopback the explorer answers only `Host` names that are loopback
//! (`localhost`, `127.0.0.1`, `[::1]`, any port) and refuses the rest with 421; a request without a
//! `Host` (HTTP/1.0, in-process tests) is let through. A request with more than one `Host` is
//! refused (400) whatever the binding: which one counts would be a guess.
//!
//! The same headers are on the answers hyper writes itself, below the router (a malformed
//! request, a URI or head too long): the server adds them ([`crate::server`]).
//!
//! Headers: a Content-Security-Policy that allows only this server's own script and stylesheet
//! (no inline script or style; plots are inline SVG with presentation attributes, which CSP does
//! not govern), no framing, no referrer, and no MIME sniffing.

use crate::AppState;
use axum::extract::{Request, State};
use axum::http::{header, HeaderName, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::Router;
use std::any::Any;
use std::sync::Arc;
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::compression::CompressionLayer;
use tower_http::set_header::SetResponseHeaderLayer;
use tower_http::CompressionLevel;

/// The Content-Security-Policy of every response.
pub(crate) const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'";

/// The policy of a standalone SVG document: its own `<style>` element and nothing else.
pub(crate) const SVG_CSP: &str = "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'";

/// The headers of every response, the answers hyper writes itself included. A route may set
/// its own Content-Security-Policy (the standalone SVG needs its `<style>`); the rest are fixed.
pub(crate) const HEADERS: [(&str, &str); 6] = [
    ("content-security-policy", CSP),
    ("x-content-type-options", "nosniff"),
    ("referrer-policy", "no-referrer"),
    ("x-frame-options", "DENY"),
    ("cross-origin-opener-policy", "same-origin"),
    ("cross-origin-resource-policy", "same-origin"),
];

/// Whether a `Host` header value names this machine's loopback interface.
pub(crate) fn is_loopback_host(host: &str) -> bool {
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
    if req.headers().get_all(header::HOST).iter().nth(1).is_some() {
        return (StatusCode::BAD_REQUEST, "more than one Host header: send exactly one").into_response();
    }
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
pub(crate) fn layers(router: Router<Arc<AppState>>, state: Arc<AppState>) -> Router<Arc<AppState>> {
    // Bodies are limited where they are read (`upload::read_body`), with the page's message.
    let router = crate::work::layer(router, &state.limits)
        .layer(CatchPanicLayer::custom(panic_response))
        // The fastest level of each: the answers are made on request, and at the codecs'
        // default levels compressing a ledger page took twice as long as rendering it.
        .layer(CompressionLayer::new().gzip(true).br(true).quality(CompressionLevel::Fastest));
    // Outside compression, so an answer is kept encoded; inside the Host check.
    let mut router = crate::cache::layer(router, state.limits.response_cache_bytes)
        .layer(axum::middleware::from_fn_with_state(state, check_host));
    for (name, value) in HEADERS {
        let (name, value) = (HeaderName::from_static(name), HeaderValue::from_static(value));
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
