//! A small cache of whole answers, keyed by the request's URI and its `Accept-Encoding`.
//!
//! Every page, document, plot and asset is a function of its URI alone (the scenario, an uploaded
//! model and the page's own keys all travel in the query, and the catalogue is fixed when the
//! server starts), and its encoding a function of `Accept-Encoding`. So a successful `GET` answer
//! is kept as it was sent, encoded, and asking again for one seen recently — the back button, a
//! slider dragged back over a value, a Serving simulation or a Powers of ten level revisited — is
//! answered without the work, the rendering or the compression. Bounded: at most
//! [`Limits::response_cache_bytes`](crate::Limits::response_cache_bytes) of answers (0 keeps
//! none), the oldest dropped first; an answer over an eighth of that is not kept.
//!
//! Only `200 OK` answers to a `GET` are kept (never an error, a 503 at the deadline, an upload or
//! an answer that closes its connection), and requests that the browser marks as coming from
//! another site's page are neither answered from the cache nor added to it, so the heavy-work
//! refusal ([`crate::work`]) applies to them as before. The Host check and the security headers
//! are layers outside this one: a cached answer gets them as a fresh one does.

use crate::work::from_other_site;
use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::Router;
use http_body_util::BodyExt;
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

/// Bytes an entry counts beyond its body and key (its headers and bookkeeping), roughly.
const ENTRY_OVERHEAD: usize = 512;

/// A kept answer.
struct Entry {
    headers: HeaderMap,
    body: Bytes,
}

/// The answers kept, oldest first in `order`.
#[derive(Default)]
struct Kept {
    map: HashMap<String, Arc<Entry>>,
    order: VecDeque<String>,
    bytes: usize,
}

/// The cache of one router.
pub(crate) struct Cache {
    kept: Mutex<Kept>,
    max_bytes: usize,
}

impl Cache {
    fn new(max_bytes: usize) -> Cache {
        Cache { kept: Mutex::default(), max_bytes }
    }

    fn kept(&self) -> std::sync::MutexGuard<'_, Kept> {
        self.kept.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn get(&self, key: &str) -> Option<Arc<Entry>> {
        self.kept().map.get(key).cloned()
    }

    /// Keep `entry` under `key` (unless it is too large, or kept already), dropping the oldest
    /// answers until the total is within bounds.
    fn put(&self, key: String, entry: Entry) {
        let size = entry.body.len() + key.len() + ENTRY_OVERHEAD;
        if size > self.max_bytes / 8 {
            return;
        }
        let mut kept = self.kept();
        if kept.map.contains_key(&key) {
            return;
        }
        while kept.bytes + size > self.max_bytes {
            let Some(old) = kept.order.pop_front() else { break };
            if let Some(e) = kept.map.remove(&old) {
                kept.bytes -= e.body.len() + old.len() + ENTRY_OVERHEAD;
            }
        }
        kept.bytes += size;
        kept.order.push_back(key.clone());
        kept.map.insert(key, Arc::new(entry));
    }
}

/// The key of a request: its `Accept-Encoding` and its path and query.
fn key(req: &Request) -> String {
    let encoding = req.headers().get(header::ACCEPT_ENCODING).map(|v| v.as_bytes()).unwrap_or_default();
    let uri = req.uri().path_and_query().map(|p| p.as_str()).unwrap_or("/");
    // A header value holds no newline, so the key is unambiguous.
    format!("{}\n{uri}", String::from_utf8_lossy(encoding))
}

async fn answer(State(cache): State<Arc<Cache>>, req: Request, next: Next) -> Response {
    if req.method() != Method::GET || from_other_site(req.headers()) {
        return next.run(req).await;
    }
    let key = key(&req);
    if let Some(hit) = cache.get(&key) {
        let mut res = Response::new(Body::from(hit.body.clone()));
        *res.headers_mut() = hit.headers.clone();
        return res;
    }
    let res = next.run(req).await;
    if res.status() != StatusCode::OK || res.headers().contains_key(header::CONNECTION) {
        return res;
    }
    let (parts, body) = res.into_parts();
    // The body is complete in memory (or an encoder over such a body): collecting it here is the
    // work of sending it.
    let Ok(body) = body.collect().await.map(|b| b.to_bytes()) else {
        return (StatusCode::INTERNAL_SERVER_ERROR, "internal error: an answer broke off while it was made")
            .into_response();
    };
    cache.put(key, Entry { headers: parts.headers.clone(), body: body.clone() });
    Response::from_parts(parts, Body::from(body))
}

/// `router` with a cache of at most `max_bytes` of answers in front of it (none for 0).
pub(crate) fn layer<S: Clone + Send + Sync + 'static>(router: Router<S>, max_bytes: usize) -> Router<S> {
    if max_bytes == 0 {
        return router;
    }
    router.layer(axum::middleware::from_fn_with_state(Arc::new(Cache::new(max_bytes)), answer))
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::routing::get;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use tower::ServiceExt;

    /// A router whose answers count how often they were made, behind the cache.
    fn counted(made: &Arc<AtomicUsize>) -> Router {
        let (a, b) = (made.clone(), made.clone());
        let router = Router::new()
            .route(
                "/page",
                get(move || async move { format!("made {}", a.fetch_add(1, Ordering::SeqCst)) })
                    .post(|| async { "posted" }),
            )
            .route(
                "/refused",
                get(move || async move {
                    b.fetch_add(1, Ordering::SeqCst);
                    (StatusCode::BAD_REQUEST, "no")
                }),
            );
        layer(router, 1 << 20)
    }

    async fn ask(router: &Router, req: axum::http::request::Builder) -> (StatusCode, String) {
        let res = router.clone().oneshot(req.body(Body::empty()).unwrap()).await.unwrap();
        let status = res.status();
        (status, String::from_utf8(res.into_body().collect().await.unwrap().to_bytes().to_vec()).unwrap())
    }

    /// A `GET` answered `200` is made once per URI and `Accept-Encoding`; errors, other methods
    /// and requests from other sites' pages are made every time.
    #[tokio::test]
    async fn answers_are_made_once_per_uri_and_encoding() {
        let made = Arc::new(AtomicUsize::new(0));
        let router = counted(&made);
        let req = |uri: &str| Request::get(uri);
        assert_eq!(ask(&router, req("/page?a=1")).await.1, "made 0");
        assert_eq!(ask(&router, req("/page?a=1")).await.1, "made 0");
        assert_eq!(ask(&router, req("/page?a=2")).await.1, "made 1");
        assert_eq!(ask(&router, req("/page?a=1").header("accept-encoding", "gzip")).await.1, "made 2");
        assert_eq!(ask(&router, req("/page?a=1").header("accept-encoding", "gzip")).await.1, "made 2");
        assert_eq!(ask(&router, req("/page?a=1").header("sec-fetch-site", "cross-site")).await.1, "made 3");
        assert_eq!(ask(&router, Request::post("/page?a=1")).await.1, "posted");
        assert_eq!(made.load(Ordering::SeqCst), 4);
        assert_eq!(ask(&router, req("/refused")).await.0, StatusCode::BAD_REQUEST);
        assert_eq!(ask(&router, req("/refused")).await.0, StatusCode::BAD_REQUEST);
        assert_eq!(made.load(Ordering::SeqCst), 6);
        // Off: nothing is kept.
        let made = Arc::new(AtomicUsize::new(0));
        let off = layer(
            Router::new().route(
                "/page",
                get({
                    let m = made.clone();
                    move || async move { format!("made {}", m.fetch_add(1, Ordering::SeqCst)) }
                }),
            ),
            0,
        );
        assert_eq!(ask(&off, Request::get("/page")).await.1, "made 0");
        assert_eq!(ask(&off, Request::get("/page")).await.1, "made 1");
    }

    fn entry(n: usize) -> Entry {
        Entry { headers: HeaderMap::new(), body: Bytes::from(vec![b'x'; n]) }
    }

    /// The cache keeps within its bound by dropping its oldest answers, keeps the first answer
    /// for a key, and never keeps an answer over an eighth of its size.
    #[test]
    fn the_oldest_answers_make_room_and_large_ones_are_not_kept() {
        let cache = Cache::new(8 * 4096);
        for i in 0..20 {
            cache.put(format!("k{i}"), entry(2000));
        }
        let kept = cache.kept();
        assert!(kept.bytes <= 8 * 4096, "{}", kept.bytes);
        assert_eq!(kept.map.len(), kept.order.len());
        assert!(!kept.map.contains_key("k0") && kept.map.contains_key("k19"));
        drop(kept);
        cache.put("k19".into(), entry(10));
        assert_eq!(cache.get("k19").unwrap().body.len(), 2000);
        cache.put("big".into(), entry(4096));
        assert!(cache.get("big").is_none());
    }
}
