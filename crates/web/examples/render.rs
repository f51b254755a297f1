//! Answers requests in process through the explorer's router, one after another, and prints the
//! time per answer and its size: a harness for profilers (not part of the test suite).
//!
//! ```sh
//! cargo run --profile profiling -p llm-ledger-web --example render -- [--encoding VALUE] [-n N] [--cache] [--print] URI…
//! # instructions per answer, counting only the measured answers:
//! valgrind --tool=callgrind --toggle-collect='render::measure' \
//!     target/profiling/examples/render -n 50 '/ledger?batch=64'
//! ```
//!
//! Each URI is asked for N times (default 200), cycling through the URIs, after one answer to
//! the first that is not measured; `--encoding` sends that `Accept-Encoding` (then the time includes
//! compression). The explorer's cache of recent answers is off, so every answer is made, unless
//! `--cache` keeps it on. `--print` writes the answer to the first URI to stdout instead, and
//! measures nothing.

/// The allocator `llm-ledger serve` runs with (the CLI's), so that this measures what it serves.
#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

use axum::body::Body;
use axum::http::Request;
use axum::Router;
use http_body_util::BodyExt;
use std::sync::Arc;
use std::time::Instant;
use tower::ServiceExt;

async fn answer(router: &Router, uri: &str, encoding: Option<&str>) -> axum::body::Bytes {
    let mut req = Request::get(uri);
    if let Some(e) = encoding {
        req = req.header("accept-encoding", e);
    }
    let res = router.clone().oneshot(req.body(Body::empty()).unwrap()).await.unwrap();
    assert!(res.status().is_success() || res.status().is_client_error(), "{uri}: {}", res.status());
    res.into_body().collect().await.unwrap().to_bytes()
}

/// The measured answers (the only ones a profiler told to toggle on this function counts).
#[inline(never)]
fn measure(rt: &tokio::runtime::Runtime, router: &Router, uris: &[String], n: usize, encoding: Option<&str>) -> usize {
    rt.block_on(async {
        let mut bytes = 0;
        for i in 0..n * uris.len() {
            bytes += answer(router, &uris[i % uris.len()], encoding).await.len();
        }
        bytes
    })
}

fn main() {
    let mut args = std::env::args().skip(1);
    let (mut n, mut encoding, mut uris, mut print, mut cache) = (200usize, None, Vec::new(), false, false);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--print" => print = true,
            "--cache" => cache = true,
            "-n" => n = args.next().and_then(|v| v.parse().ok()).expect("-n N"),
            "--encoding" => encoding = Some(args.next().expect("--encoding VALUE")),
            _ => uris.push(a),
        }
    }
    if uris.is_empty() {
        uris.push("/ledger".into());
    }
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let mut state = llm_ledger_web::AppState::builtin();
    if !cache {
        state.limits.response_cache_bytes = 0;
    }
    let router = llm_ledger_web::app(Arc::new(state));
    if print {
        let body = rt.block_on(answer(&router, &uris[0], encoding.as_deref()));
        std::io::Write::write_all(&mut std::io::stdout(), &body).unwrap();
        return;
    }
    // One answer first, not measured (lazily built tables, the allocator's first pages).
    rt.block_on(answer(&router, &uris[0], encoding.as_deref()));
    let start = Instant::now();
    let bytes = measure(&rt, &router, &uris, n, encoding.as_deref());
    let count = n * uris.len();
    println!(
        "{count} answers, {:.1} µs and {:.1} kB each",
        start.elapsed().as_secs_f64() * 1e6 / count as f64,
        bytes as f64 / count as f64 / 1e3
    );
}
