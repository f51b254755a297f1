//! The stylesheet and the script, embedded in the binary and served from memory. Their paths
//! carry a hash of their content, so browsers may cache them for good and a new build is never
//! served an old file.

use crate::AppState;
use axum::http::header;
use axum::response::IntoResponse;
use axum::routing::get;
use axum::Router;
use std::sync::{Arc, OnceLock};

const CSS: &str = include_str!("../assets/app.css");
const JS: &str = include_str!("../assets/app.js");

/// FNV-1a, 64-bit: a content tag for cache busting (not security).
fn fnv1a(s: &str) -> u64 {
    s.bytes().fold(0xcbf29ce484222325, |h, b| (h ^ u64::from(b)).wrapping_mul(0x100000001b3))
}

fn tagged(cell: &'static OnceLock<String>, content: &str, ext: &str) -> &'static str {
    cell.get_or_init(|| format!("/assets/app.{:08x}.{ext}", fnv1a(content) >> 32))
}

/// Path of the stylesheet.
pub(crate) fn css_path() -> &'static str {
    static P: OnceLock<String> = OnceLock::new();
    tagged(&P, CSS, "css")
}

/// Path of the script.
pub(crate) fn js_path() -> &'static str {
    static P: OnceLock<String> = OnceLock::new();
    tagged(&P, JS, "js")
}

/// The asset routes.
pub(crate) fn routes() -> Router<Arc<AppState>> {
    const CACHE: &str = "public, max-age=31536000, immutable";
    Router::new()
        .route(
            css_path(),
            get(|| async {
                ([(header::CONTENT_TYPE, "text/css; charset=utf-8"), (header::CACHE_CONTROL, CACHE)], CSS)
                    .into_response()
            }),
        )
        .route(
            js_path(),
            get(|| async {
                ([(header::CONTENT_TYPE, "text/javascript; charset=utf-8"), (header::CACHE_CONTROL, CACHE)], JS)
                    .into_response()
            }),
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn asset_paths_carry_a_content_tag() {
        assert_eq!(css_path().len(), "/assets/app.".len() + 8 + ".css".len(), "{}", css_path());
        assert!(js_path().starts_with("/assets/app.") && js_path().ends_with(".js"));
        assert_ne!(css_path()[12..20], js_path()[12..20]);
    }
}
