//! Server-side time of every page (at most 10 ms each): the whole request through the
//! router in process — query parsing, the core's numbers, the report, the HTML with its plots and
//! the Powers of ten picture — as a live update of the explorer fetches it.
//!
//! The `encoded` group asks for a few of them gzip- and brotli-encoded, as a browser does:
//! rendering and compression together.
//!
//! `cargo bench -p llm-ledger-web --bench pages`

use axum::body::Body;
use axum::http::Request;
use criterion::{criterion_group, criterion_main, Criterion};
use http_body_util::BodyExt;
use llm_ledger_web::{app, AppState};
use std::sync::Arc;
use tower::ServiceExt;

/// Each page with a query that shows what it is for; the Powers of ten levels the sliders and the
/// picture fetch most.
const PAGES: &[&str] = &[
    "/",
    "/?model=llama-3.1-405b&gpu=l4",
    "/powers-of-ten",
    "/powers-of-ten?at=layer.0",
    "/powers-of-ten?at=layer.0.mlp.up.tiles",
    "/powers-of-ten?batch=64&expand=1",
    "/ledger",
    "/ledger?batch=64",
    "/batching",
    "/kv-cache?batch=64",
    "/cost?batch=16&tpot_ms=20",
    "/gemm-tiling?m=1000&n=1000&k=1000",
    "/moe?model=mixtral-8x7b&zipf=1",
    "/compare",
    "/compare?s1=batch%3D8&s2=batch%3D64%26kv%3Dfp8&s3=default&s4=batch%3D8%26tp%3D2",
    "/graph",
    "/graph?find=proj",
    "/graph?model=deepseek-v3&expand=1",
    "/need",
    "/need?model=llama-3-70b&batch=16",
    "/models",
    "/gpus",
];

fn pages(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    // Every answer made, none from the cache of recent answers.
    let mut state = AppState::builtin();
    state.limits.response_cache_bytes = 0;
    let router = app(Arc::new(state));
    let mut group = c.benchmark_group("page");
    for uri in PAGES {
        group.bench_function(*uri, |b| {
            b.to_async(&rt).iter(|| async {
                let res = router.clone().oneshot(Request::get(*uri).body(Body::empty()).unwrap()).await.unwrap();
                assert!(res.status().is_success(), "{uri}: {}", res.status());
                res.into_body().collect().await.unwrap().to_bytes().len()
            })
        });
    }
    group.finish();
    // The same pages as a browser fetches them (`Accept-Encoding`): rendering and compression.
    let mut group = c.benchmark_group("encoded");
    for encoding in ["gzip", "br"] {
        for uri in ["/", "/ledger", "/api/ledger?batch=8&model=mixtral-8x7b"] {
            group.bench_function(format!("{uri} {encoding}"), |b| {
                b.to_async(&rt).iter(|| async {
                    let req = Request::get(uri).header("accept-encoding", encoding).body(Body::empty()).unwrap();
                    let res = router.clone().oneshot(req).await.unwrap();
                    assert!(res.status().is_success(), "{uri}: {}", res.status());
                    assert_eq!(res.headers()["content-encoding"], encoding);
                    res.into_body().collect().await.unwrap().to_bytes().len()
                })
            });
        }
    }
    group.finish();
}

criterion_group!(benches, pages);
criterion_main!(benches);
