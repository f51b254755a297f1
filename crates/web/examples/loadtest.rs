//! Load test of the explorer over loopback (not part of the test suite).
//!
//! ```sh
//! cargo run --release -p llm-ledger-web --example loadtest -- [CONNECTIONS] [SECONDS] [URL]
//! ```
//!
//! Opens CONNECTIONS keep-alive HTTP/1.1 connections (default 64) that each send requests back to
//! back for SECONDS (default 10), cycling through a mix of pages and JSON documents, then prints
//! requests per second and latency percentiles. Without URL it serves the explorer itself on a
//! loopback port in the same process (client and server then share the CPU cores).

use axum::body::Body;
use http_body_util::BodyExt;
use hyper::Request;
use hyper_util::rt::TokioIo;
use std::sync::Arc;
use std::time::{Duration, Instant};

const PATHS: &[&str] = &[
    "/",
    "/ledger",
    "/ledger?batch=64&ctx=8192&kv=fp8",
    "/api/ledger?batch=8&model=mixtral-8x7b",
    "/api/ledger?model=deepseek-v3&gpu=b200&phase=prefill&ctx=4096&format=csv",
    "/models",
    "/gpus",
    "/ledger?batch=0",
];

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let connections: usize = args.first().and_then(|s| s.parse().ok()).unwrap_or(64);
    let seconds: u64 = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(10);
    let addr = match args.get(2) {
        Some(url) => url.trim_start_matches("http://").trim_end_matches('/').to_string(),
        None => {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind loopback");
            let addr = listener.local_addr().unwrap().to_string();
            let state = Arc::new(llm_ledger_web::AppState::builtin());
            tokio::spawn(llm_ledger_web::serve_listener(listener, state, std::future::pending()));
            addr
        }
    };
    let deadline = Instant::now() + Duration::from_secs(seconds);
    let tasks: Vec<_> = (0..connections)
        .map(|i| {
            let addr = addr.clone();
            tokio::spawn(async move { client(&addr, i, deadline).await })
        })
        .collect();
    let mut latencies = Vec::new();
    let (mut errors, mut bytes) = (0usize, 0usize);
    for t in tasks {
        let (l, e, b) = t.await.expect("client task");
        latencies.extend(l);
        errors += e;
        bytes += b;
    }
    latencies.sort();
    let n = latencies.len();
    let pct = |p: f64| latencies.get(((n as f64 * p) as usize).min(n.saturating_sub(1))).copied().unwrap_or_default();
    println!("{connections} connections, {seconds} s, {} paths, server {addr}", PATHS.len());
    println!(
        "requests: {n} ({:.0} per second), errors: {errors}, {:.1} MB received",
        n as f64 / seconds as f64,
        bytes as f64 / 1e6
    );
    println!(
        "latency: p50 {:?}  p90 {:?}  p99 {:?}  p99.9 {:?}  max {:?}",
        pct(0.50),
        pct(0.90),
        pct(0.99),
        pct(0.999),
        latencies.last().copied().unwrap_or_default()
    );
}

/// One keep-alive connection sending requests until the deadline: (latencies, errors, bytes).
async fn client(addr: &str, offset: usize, deadline: Instant) -> (Vec<Duration>, usize, usize) {
    let mut latencies = Vec::new();
    let (mut errors, mut bytes) = (0, 0);
    let stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream)).await.expect("handshake");
    tokio::spawn(conn);
    let mut i = offset;
    while Instant::now() < deadline {
        let path = PATHS[i % PATHS.len()];
        i += 1;
        let req = Request::get(path).header("host", addr).body(Body::empty()).unwrap();
        let start = Instant::now();
        match sender.send_request(req).await {
            Ok(res) => {
                let ok = res.status().is_success() || res.status() == 400;
                match res.into_body().collect().await {
                    Ok(b) if ok => {
                        bytes += b.to_bytes().len();
                        latencies.push(start.elapsed());
                    }
                    _ => errors += 1,
                }
            }
            Err(_) => {
                errors += 1;
                break;
            }
        }
    }
    (latencies, errors, bytes)
}
