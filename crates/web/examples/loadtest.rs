//! Load test of the explorer over loopback (not part of the test suite).
//!
//! ```sh
//! cargo run --release -p llm-ledger-web --example loadtest -- [CONNECTIONS] [SECONDS] [URL] [OPTIONS]
//! ```
//!
//! Opens CONNECTIONS keep-alive HTTP/1.1 connections (default 64) that each send requests back to
//! back for SECONDS (default 10), then prints requests per second and latency percentiles.
//! Without URL it serves the explorer itself on a loopback port in the same process, on a runtime
//! of its own as `llm-ledger serve` does (client and server then share the CPU cores).
//!
//! Options:
//!
//! - `--only PATH`: every connection asks for PATH (`/ledger`, `/`, `/api/ledger` …) instead of
//!   cycling through the mix of 8 paths (overview, ledgers, JSON and CSV documents, listings,
//!   one 400).
//! - `--vary` / `--fixed`: draw each request's `batch` (1 to 1,024) and `ctx` (128 to 32,768) at
//!   random where the path does not set them, so that almost no two requests ask for the same
//!   page; or send the paths exactly as written. `--only` varies by default, the mix is fixed.
//! - `--heavy N`: N more connections asking back to back for pages and documents that run on the
//!   heavy-work pool (Powers of ten, Batching, Serving, `/api/sweep`, always with varied inputs,
//!   so that their work is done), reported apart from the others: with N at least the pool's
//!   size it stays saturated.
//! - `--encoding VALUE`: send `Accept-Encoding: VALUE` (a browser sends `gzip, deflate, br,
//!   zstd`); by default none, so answers come back uncompressed.
//! - `--warmup SECONDS`: requests in the first SECONDS are sent but not counted (default 1).
//! - `--heavy-workers N`: the in-process server's heavy-work pool has N threads (default: one
//!   per core).
//! - `--no-cache`: the in-process server keeps no answers (`Limits::response_cache_bytes` 0), so
//!   a fixed path is made on every request. With `--vary` the cache is hardly ever hit: a
//!   request repeats one of the last few hundred (what 16 MiB holds) about once in 100,000.
//!
//! It prints the load average before and after, and for an in-process server the CPU time the
//! whole process (client and server) spent per counted request.

/// The allocator `llm-ledger serve` runs with (the CLI's), so that this measures what it serves.
#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

use axum::body::Body;
use http_body_util::BodyExt;
use hyper::Request;
use hyper_util::rt::TokioIo;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The default mix.
const MIX: &[&str] = &[
    "/",
    "/ledger",
    "/ledger?batch=64&ctx=8192&kv=fp8",
    "/api/ledger?batch=8&model=mixtral-8x7b",
    "/api/ledger?model=deepseek-v3&gpu=b200&phase=prefill&ctx=4096&format=csv",
    "/models",
    "/gpus",
    "/ledger?batch=0",
];

/// What the heavy connections ask for (each with a varied `batch` and `ctx`).
const HEAVY: &[&str] =
    &["/powers-of-ten", "/powers-of-ten?at=layer.0", "/batching", "/serving?requests=500", "/api/sweep?batch=1..2048"];

/// Paths that take no scenario (never varied).
const NO_SCENARIO: &[&str] = &["/models", "/gpus", "/api/models", "/api/gpus"];

struct Options {
    connections: usize,
    seconds: u64,
    warmup: u64,
    url: Option<String>,
    only: Option<String>,
    vary: Option<bool>,
    heavy: usize,
    heavy_workers: Option<usize>,
    no_cache: bool,
    encoding: Option<String>,
}

fn options() -> Options {
    let mut o = Options {
        connections: 64,
        seconds: 10,
        warmup: 1,
        url: None,
        only: None,
        vary: None,
        heavy: 0,
        heavy_workers: None,
        no_cache: false,
        encoding: None,
    };
    let mut positional = 0;
    let mut args = std::env::args().skip(1);
    let usage = "usage: loadtest [CONNECTIONS] [SECONDS] [URL] [--only PATH] [--vary|--fixed] [--heavy N] [--encoding VALUE] [--warmup SECONDS] [--heavy-workers N] [--no-cache]";
    let value = |args: &mut dyn Iterator<Item = String>, flag: &str| {
        args.next().unwrap_or_else(|| panic!("{flag} needs a value\n{usage}"))
    };
    while let Some(a) = args.next() {
        match a.as_str() {
            "--only" => o.only = Some(value(&mut args, "--only")),
            "--vary" => o.vary = Some(true),
            "--no-cache" => o.no_cache = true,
            "--fixed" => o.vary = Some(false),
            "--heavy" => o.heavy = value(&mut args, "--heavy").parse().expect("--heavy N"),
            "--encoding" => o.encoding = Some(value(&mut args, "--encoding")),
            "--warmup" => o.warmup = value(&mut args, "--warmup").parse().expect("--warmup SECONDS"),
            "--heavy-workers" => {
                o.heavy_workers = Some(value(&mut args, "--heavy-workers").parse().expect("--heavy-workers N"))
            }
            "-h" | "--help" => {
                println!("{usage}");
                std::process::exit(0);
            }
            _ if a.starts_with("--") => panic!("unknown option {a}\n{usage}"),
            _ => {
                match positional {
                    0 => o.connections = a.parse().expect("CONNECTIONS"),
                    1 => o.seconds = a.parse().expect("SECONDS"),
                    2 => o.url = Some(a),
                    _ => panic!("{usage}"),
                }
                positional += 1;
            }
        }
    }
    o
}

/// What one group of connections asks for.
#[derive(Clone)]
struct Plan {
    paths: Arc<Vec<String>>,
    vary: bool,
    encoding: Option<String>,
}

/// SplitMix64: a small, fast generator (the draws only need to differ, not to be good).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `lo..=hi`.
    fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next() % (hi - lo + 1)
    }
}

/// `path` with a random `batch` and `ctx` where it sets neither (and takes a scenario).
fn varied(path: &str, rng: &mut Rng) -> String {
    let (base, query) = path.split_once('?').unwrap_or((path, ""));
    if NO_SCENARIO.contains(&base) {
        return path.to_string();
    }
    let has = |k: &str| query.split('&').any(|p| p.split('=').next() == Some(k));
    let mut extra = Vec::new();
    if !has("batch") {
        extra.push(format!("batch={}", rng.range(1, 1024)));
    }
    if !has("ctx") {
        extra.push(format!("ctx={}", rng.range(128, 32768)));
    }
    if extra.is_empty() {
        return path.to_string();
    }
    let sep = if query.is_empty() { '?' } else { '&' };
    format!("{path}{sep}{}", extra.join("&"))
}

/// The latencies, errors and bytes of one group of connections.
#[derive(Default)]
struct Tally {
    latencies: Vec<Duration>,
    errors: usize,
    bytes: usize,
}

impl Tally {
    /// Count an error; the first of each connection is printed.
    fn error(&mut self, what: String) {
        if self.errors == 0 {
            eprintln!("error: {what}");
        }
        self.errors += 1;
    }

    fn merge(&mut self, other: Tally) {
        self.latencies.extend(other.latencies);
        self.errors += other.errors;
        self.bytes += other.bytes;
    }

    fn print(&mut self, name: &str, seconds: u64) {
        self.latencies.sort();
        let l = &self.latencies;
        let n = l.len();
        let pct = |p: f64| l.get(((n as f64 * p) as usize).min(n.saturating_sub(1))).copied().unwrap_or_default();
        let ms = |d: Duration| format!("{:.2} ms", d.as_secs_f64() * 1e3);
        println!(
            "{name}: {n} requests ({:.0} per second), errors: {}, {:.1} kB per answer",
            n as f64 / seconds as f64,
            self.errors,
            self.bytes as f64 / n.max(1) as f64 / 1e3
        );
        println!(
            "{name} latency: p50 {}  p90 {}  p99 {}  p99.9 {}  max {}",
            ms(pct(0.50)),
            ms(pct(0.90)),
            ms(pct(0.99)),
            ms(pct(0.999)),
            ms(l.last().copied().unwrap_or_default())
        );
    }
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "?".into())
}

/// CPU time (user + system) this process has used, where the system says (Linux).
fn process_cpu() -> Option<Duration> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    // Fields 14 and 15 of the file (utime, stime), in clock ticks: 100 per second on Linux.
    let ticks: u64 = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    Some(Duration::from_millis(ticks * 10))
}

#[tokio::main]
async fn main() {
    let o = options();
    let in_process = o.url.is_none();
    let addr = match &o.url {
        Some(url) => url.trim_start_matches("http://").trim_end_matches('/').to_string(),
        None => {
            // The server on its own runtime and threads, as `llm-ledger serve` runs it.
            let (tx, rx) = std::sync::mpsc::channel();
            let mut state = llm_ledger_web::AppState::builtin();
            if let Some(n) = o.heavy_workers {
                state.limits.heavy_workers = n;
            }
            if o.no_cache {
                state.limits.response_cache_bytes = 0;
            }
            std::thread::spawn(move || {
                let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("server runtime");
                rt.block_on(async move {
                    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind loopback");
                    tx.send(listener.local_addr().unwrap().to_string()).unwrap();
                    llm_ledger_web::serve_listener(listener, Arc::new(state), std::future::pending()).await
                })
            });
            rx.recv().expect("server address")
        }
    };
    let cheap_paths: Vec<String> = match &o.only {
        Some(p) => vec![p.clone()],
        None => MIX.iter().map(|s| s.to_string()).collect(),
    };
    let vary = o.vary.unwrap_or(o.only.is_some());
    let cheap = Plan { paths: Arc::new(cheap_paths), vary, encoding: o.encoding.clone() };
    // Always varied, so that heavy work is done (not answered from the cache) and the pool stays busy.
    let heavy = Plan {
        paths: Arc::new(HEAVY.iter().map(|s| s.to_string()).collect()),
        vary: true,
        encoding: o.encoding.clone(),
    };
    println!(
        "{} connections{}, {} s after {} s of warm-up, server {addr}{}",
        o.connections,
        if o.heavy > 0 { format!(" + {} heavy", o.heavy) } else { String::new() },
        o.seconds,
        o.warmup,
        match (in_process, o.heavy_workers) {
            (false, _) => String::new(),
            (true, None) => format!(" (in process{})", if o.no_cache { ", no cache" } else { "" }),
            (true, Some(n)) =>
                format!(" (in process, {n} heavy workers{})", if o.no_cache { ", no cache" } else { "" }),
        }
    );
    println!(
        "paths: {}{}; Accept-Encoding: {}",
        o.only.as_deref().unwrap_or("the mix of 8"),
        if vary { ", batch and ctx varied" } else { ", as written" },
        o.encoding.as_deref().unwrap_or("none")
    );
    println!("load average before: {}", load_average());
    let start = Instant::now() + Duration::from_secs(o.warmup);
    let deadline = start + Duration::from_secs(o.seconds);
    let spawn = |plan: &Plan, i: usize| {
        let (addr, plan) = (addr.clone(), plan.clone());
        tokio::spawn(async move { client(&addr, &plan, i, start, deadline).await })
    };
    let cheap_tasks: Vec<_> = (0..o.connections).map(|i| spawn(&cheap, i)).collect();
    let heavy_tasks: Vec<_> = (0..o.heavy).map(|i| spawn(&heavy, 1_000_000 + i)).collect();
    tokio::time::sleep_until(start.into()).await;
    let cpu_start = process_cpu();
    let mut tallies = Vec::new();
    for tasks in [cheap_tasks, heavy_tasks] {
        let mut t = Tally::default();
        for task in tasks {
            t.merge(task.await.expect("client task"));
        }
        tallies.push(t);
    }
    let cpu = process_cpu().zip(cpu_start).map(|(end, start)| end.saturating_sub(start));
    println!("load average after: {}", load_average());
    let counted: usize = tallies.iter().map(|t| t.latencies.len()).sum();
    tallies[0].print(if o.heavy > 0 { "cheap" } else { "all" }, o.seconds);
    if o.heavy > 0 {
        tallies[1].print("heavy", o.seconds);
    }
    if let (true, Some(cpu)) = (in_process, cpu) {
        println!(
            "process CPU (client and server): {:.2} s, {:.0} µs per request",
            cpu.as_secs_f64(),
            cpu.as_secs_f64() * 1e6 / counted.max(1) as f64
        );
    }
}

/// One keep-alive connection sending requests until the deadline; those that end after `start`
/// are counted.
async fn client(addr: &str, plan: &Plan, offset: usize, start: Instant, deadline: Instant) -> Tally {
    let mut t = Tally::default();
    let mut rng = Rng(offset as u64 + 1);
    let stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let _ = stream.set_nodelay(true);
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream)).await.expect("handshake");
    tokio::spawn(conn);
    let mut i = offset;
    while Instant::now() < deadline {
        let path = &plan.paths[i % plan.paths.len()];
        i += 1;
        let path = if plan.vary { varied(path, &mut rng) } else { path.clone() };
        let mut req = Request::get(&path).header("host", addr);
        if let Some(e) = &plan.encoding {
            req = req.header("accept-encoding", e);
        }
        let req = req.body(Body::empty()).unwrap();
        let began = Instant::now();
        match sender.send_request(req).await {
            Ok(res) => {
                let status = res.status();
                let ok = status.is_success() || status == 400;
                let body = res.into_body().collect().await;
                if began < start {
                    continue;
                }
                match body {
                    Ok(b) if ok => {
                        t.bytes += b.to_bytes().len();
                        t.latencies.push(began.elapsed());
                    }
                    Ok(_) => t.error(format!("{status} from {path}")),
                    Err(e) => t.error(format!("the body of {path} broke off: {e}")),
                }
            }
            Err(e) => {
                t.error(format!("{path}: {e}"));
                break;
            }
        }
    }
    t
}
