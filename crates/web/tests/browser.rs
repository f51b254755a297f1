//! The explorer in a real browser: Debian's Chromium, headless, driven through chromedriver
//! (WebDriver) with `fantoccini`. The server runs in this process on a loopback port; nothing
//! touches the network.
//!
//! What is checked: the page loads; changing a control swaps the numbers without a full reload and
//! puts the state in the URL; links and the back button move between states; Powers of ten
//! descends from the model to a GEMM's tiles and comes back by the breadcrumb, and an experiment
//! changes the intensity; a control on Batching changes the curve and the table; an uploaded
//! config.json becomes the model; with JavaScript off the same controls work as a plain form; and
//! a screenshot of every page, in the light and the dark theme, is saved under
//! `target/browser-screenshots/` (look at them).
//!
//! Chromium and chromedriver are found on PATH (or `LLM_LEDGER_CHROMIUM` / `LLM_LEDGER_CHROMEDRIVER`).
//! Without them the test prints `SKIP: <reason>` on stderr (past the test harness's capture, so
//! it shows in a plain `cargo test`), and fails when `CI` is set (to anything but empty, `0` or
//! `false`).

use fantoccini::{Client, ClientBuilder, Locator};
use llm_ledger_core::{Catalog, Ledger, ScenarioRequest};
use llm_ledger_report::LedgerReport;
use llm_ledger_web::pages::PAGES;
use llm_ledger_web::{serve_listener, AppState, Limits};
use serde_json::json;
use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

type Result<T = ()> = std::result::Result<T, String>;

/// WebDriver errors as text, for the failure report.
trait TextErr<T> {
    fn text_err(self) -> Result<T>;
}

impl<T, E: std::fmt::Display> TextErr<T> for std::result::Result<T, E> {
    fn text_err(self) -> Result<T> {
        self.map_err(|e| e.to_string())
    }
}

/// Whether the environment variable `CI` (its value `ci`) asks that every test run: set, and not
/// empty, `0` or `false`.
fn is_ci(ci: Option<&str>) -> bool {
    ci.map(str::trim).is_some_and(|v| !v.is_empty() && v != "0" && !v.eq_ignore_ascii_case("false"))
}

/// A test that cannot run: say so where it is seen, and fail in CI.
fn skip(why: &str) {
    use std::io::Write;
    // Straight to the process's stderr: the harness captures `eprintln!` of passing tests.
    let _ = writeln!(std::io::stderr(), "SKIP: {why}");
    if is_ci(std::env::var("CI").ok().as_deref()) {
        panic!("this test cannot be skipped in CI: {why}");
    }
}

/// Longest wait for the browser to show something (generous: two shared cores).
const PATIENCE: Duration = Duration::from_secs(60);

fn which(env: &str, names: &[&str]) -> Option<PathBuf> {
    if let Some(p) = std::env::var_os(env) {
        return Some(PathBuf::from(p)).filter(|p| p.is_file());
    }
    let path = std::env::var_os("PATH")?;
    names
        .iter()
        .flat_map(|n| std::env::split_paths(&path).map(move |d| d.join(n)))
        .chain(["/usr/lib/chromium/chromedriver"].iter().map(PathBuf::from))
        .find(|p| p.is_file() && names.iter().any(|n| p.ends_with(n)))
}

fn screenshots_dir() -> PathBuf {
    // CARGO_TARGET_TMPDIR is target/tmp.
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).parent().expect("target dir").join("browser-screenshots");
    std::fs::create_dir_all(&dir).expect("create target/browser-screenshots");
    dir
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).map(|a| a.port()).expect("a free port")
}

/// chromedriver, killed (with its browsers) when dropped, also on a failed assertion.
struct Driver {
    child: Child,
    port: u16,
    profiles: Vec<PathBuf>,
}

impl Driver {
    fn start(exe: &Path) -> Result<Driver> {
        let port = free_port();
        let child = Command::new(exe)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", exe.display()))?;
        let d = Driver { child, port, profiles: Vec::new() };
        let start = Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            if start.elapsed() > PATIENCE {
                return Err("chromedriver did not start listening".into());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Ok(d)
    }

    /// A fresh headless browser session; `extra` flags and prefs on top of the required ones.
    async fn session(&mut self, chromium: &Path, extra: &[&str], prefs: serde_json::Value) -> Result<Client> {
        let profile =
            std::env::temp_dir().join(format!("llm-ledger-chromium-{}-{}", std::process::id(), self.profiles.len()));
        let _ = std::fs::remove_dir_all(&profile);
        self.profiles.push(profile.clone());
        let mut args: Vec<String> = [
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-dev-shm-usage",
            "--window-size=1280,1800",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        args.push(format!("--user-data-dir={}", profile.display()));
        args.extend(extra.iter().map(|s| s.to_string()));
        let caps = json!({ "goog:chromeOptions": { "binary": chromium, "args": args, "prefs": prefs } });
        let serde_json::Value::Object(caps) = caps else { unreachable!() };
        ClientBuilder::new(hyper_util::client::legacy::connect::HttpConnector::new())
            .capabilities(caps)
            .connect(&format!("http://127.0.0.1:{}", self.port))
            .await
            .map_err(|e| format!("cannot open a browser session: {e}"))
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        for p in &self.profiles {
            let _ = std::fs::remove_dir_all(p);
        }
    }
}

/// Poll `check` until it yields `Some`, or fail after `PATIENCE` naming `what`.
async fn until<T, F, Fut>(what: &str, mut check: F) -> Result<T>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let start = Instant::now();
    loop {
        if let Some(v) = check().await {
            return Ok(v);
        }
        if start.elapsed() > PATIENCE {
            return Err(format!("timed out waiting for {what}"));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn data_value(c: &Client, id: &str) -> Option<String> {
    c.find(Locator::Id(id)).await.ok()?.attr("data-value").await.ok()?
}

async fn url(c: &Client) -> String {
    c.current_url().await.map(|u| u.to_string()).unwrap_or_default()
}

async fn heading(c: &Client) -> Option<String> {
    c.find(Locator::Css("main h1")).await.ok()?.text().await.ok()
}

async fn wait_heading(c: &Client, h: &str) -> Result {
    until(&format!("the heading {h:?}"), || async { heading(c).await.filter(|t| t.starts_with(h)).map(|_| ()) }).await
}

async fn wait_url(c: &Client, part: &str) -> Result<String> {
    until(&format!("a URL containing {part:?}"), || async { Some(url(c).await).filter(|u| u.contains(part)) }).await
}

/// Save a screenshot of the whole page (the window is sized to the document first).
async fn shot(c: &Client, name: &str) -> Result {
    shot_at(c, name, 1280, 1800).await
}

/// Save a screenshot of the whole page at `width` (the window is sized to the document first),
/// then restore the window to `width` × `height`.
async fn shot_at(c: &Client, name: &str, width: u32, height: u32) -> Result {
    let h = c
        .execute("return Math.ceil(document.documentElement.scrollHeight)", vec![])
        .await
        .ok()
        .and_then(|v| v.as_u64())
        .unwrap_or(1800)
        .clamp(600, 6000);
    c.set_window_size(width, h as u32 + 140).await.text_err()?;
    let png = c.screenshot().await.map_err(|e| format!("screenshot {name}: {e}"))?;
    if png.len() < 1000 || !png.starts_with(b"\x89PNG") {
        return Err(format!("screenshot {name} is not a PNG"));
    }
    std::fs::write(screenshots_dir().join(format!("{name}.png")), png).text_err()?;
    c.set_window_size(width, height).await.text_err()
}

/// The step time the CLI computes for these inputs, as the page writes it (`{}` of the f64).
fn cli_step_time(pairs: &[(&str, &str)]) -> String {
    let req: ScenarioRequest = serde_urlencoded::from_str(&serde_urlencoded::to_string(pairs).unwrap()).unwrap();
    let sc = req.resolve(&Catalog::builtin()).unwrap();
    LedgerReport::new(&sc, &Ledger::build(&sc)).step_time_s.to_string()
}

async fn with_javascript(c: &Client, base: &str) -> Result {
    // Load the overview.
    c.goto(base).await.text_err()?;
    wait_heading(c, "Overview").await?;
    let first = until("the step time", || data_value(c, "step-time")).await?;
    assert_eq!(first, cli_step_time(&[]));
    shot(c, "overview").await?;
    open_panel(c).await?;
    // A marker that a full reload would wipe.
    c.execute("window.__noReload = 1", vec![]).await.text_err()?;

    // Type a batch size and press Enter: the numbers change in place and the URL follows.
    let batch = c.find(Locator::Id("f-batch")).await.text_err()?;
    batch.send_keys("64\u{E007}").await.text_err()?;
    wait_url(c, "batch=64").await?;
    let expected = cli_step_time(&[("batch", "64")]);
    until("the batch-64 step time", || async { data_value(c, "step-time").await.filter(|v| *v == expected) }).await?;
    assert_ne!(expected, first, "the control changed the numbers");

    // A select: the KV cache to fp8.
    let kv = c.find(Locator::Id("f-kv")).await.text_err()?;
    kv.select_by_value("fp8").await.text_err()?;
    let u = wait_url(c, "kv=fp8").await?;
    assert!(u.contains("batch=64"), "{u}");
    let expected = cli_step_time(&[("batch", "64"), ("kv", "fp8")]);
    until("the fp8-KV step time", || async { data_value(c, "step-time").await.filter(|v| *v == expected) }).await?;
    let kept = c.execute("return window.__noReload === 1", vec![]).await.text_err()?;
    assert_eq!(kept, json!(true), "the page was updated without a full reload");

    // Navigate by the navigation: the state travels along.
    c.find(Locator::Css("nav a[data-slug='ledger']")).await.text_err()?.click().await.text_err()?;
    wait_heading(c, "Ledger").await?;
    let u = wait_url(c, "/ledger?").await?;
    assert!(u.contains("batch=64") && u.contains("kv=fp8"), "{u}");
    until("the roofline points", || async {
        c.find_all(Locator::Css("svg.roofline circle.op title")).await.ok().filter(|v| v.len() >= 10).map(|_| ())
    })
    .await?;
    shot(c, "ledger").await?;

    // One of the walk-through's experiments, then back and forward.
    c.find(Locator::LinkText("Drop the weights to INT4")).await.text_err()?.click().await.text_err()?;
    wait_url(c, "weights=int4").await?;
    let int4 = cli_step_time(&[("batch", "64"), ("weights", "int4"), ("kv", "fp8")]);
    until("the int4 step time", || async { data_value(c, "step-time").await.filter(|v| *v == int4) }).await?;
    c.back().await.text_err()?;
    until("the URL before the experiment", || async {
        Some(url(c).await).filter(|u| !u.contains("weights=int4") && u.contains("/ledger?"))
    })
    .await?;
    let expected = cli_step_time(&[("batch", "64"), ("kv", "fp8")]);
    until("the numbers before the experiment", || async {
        data_value(c, "step-time").await.filter(|v| *v == expected)
    })
    .await?;
    c.back().await.text_err()?;
    wait_heading(c, "Overview").await?;
    c.forward().await.text_err()?;
    wait_heading(c, "Ledger").await?;

    // The listings, a model from the list, a page still to come, and an error.
    c.find(Locator::Css("nav a[data-slug='models']")).await.text_err()?.click().await.text_err()?;
    wait_heading(c, "Models").await?;
    shot(c, "models").await?;
    c.find(Locator::Css("tr[data-model='mistral-7b'] a")).await.text_err()?.click().await.text_err()?;
    wait_url(c, "model=mistral-7b").await?;
    wait_heading(c, "Ledger").await?;
    c.find(Locator::Css("nav a[data-slug='gpus']")).await.text_err()?.click().await.text_err()?;
    wait_heading(c, "GPUs").await?;
    shot(c, "gpus").await?;
    powers_of_ten(c, base).await?;
    batching(c, base).await?;
    for (slug, query) in PAGE_SHOTS {
        let page = PAGES.iter().find(|p| p.slug == *slug).expect("a page");
        c.goto(&format!("{base}{slug}{query}")).await.text_err()?;
        wait_heading(c, page.title).await?;
        shot(c, slug).await?;
    }
    c.goto(&format!("{base}ledger?batch=0&gpu=h100")).await.text_err()?;
    let msg = until("the error box", || async { c.find(Locator::Css("#error .message")).await.ok() }).await?;
    assert_eq!(msg.text().await.text_err()?, "invalid `batch`: 0 (an integer from 1 to 1,073,741,824)");
    shot(c, "error").await?;

    // Upload a config.json: it becomes the model, and the URL carries it.
    let file = std::env::temp_dir().join(format!("llm-ledger-browser-{}-config.json", std::process::id()));
    std::fs::write(&file, GPT2_CONFIG).text_err()?;
    c.goto(&format!("{base}ledger?batch=4")).await.text_err()?;
    wait_heading(c, "Ledger").await?;
    let input = c.find(Locator::Id("f-config")).await.text_err()?;
    input.send_keys(&file.display().to_string()).await.text_err()?;
    let u = wait_url(c, "config=").await?;
    let _ = std::fs::remove_file(&file);
    assert!(u.contains("/ledger?batch=4&config="), "{u}");
    until("the uploaded model in the headline", || async {
        c.find(Locator::Id("headline")).await.ok()?.text().await.ok().filter(|t| t.starts_with("uploaded on h100-sxm"))
    })
    .await?;
    shot(c, "ledger-uploaded").await?;
    Ok(())
}

/// The pages screenshotted as they are (Powers of ten and Batching have their own walks), with a query
/// that shows what they are for.
const PAGE_SHOTS: &[(&str, &str)] = &[
    ("kv-cache", "?batch=64"),
    ("cost", "?batch=16&tpot_ms=20"),
    ("gemm-tiling", "?m=1000&n=1000&k=1000"),
    ("moe", "?model=mixtral-8x7b&zipf=1"),
    ("serving", "?requests=200"),
    ("compare", "?s1=batch%3D8&s2=batch%3D64%26kv%3Dfp8&s3=default"),
    ("graph", "?find=proj"),
    ("need", "?model=llama-3-70b&batch=16"),
];

async fn node_path(c: &Client) -> Option<String> {
    c.find(Locator::Id("node")).await.ok()?.attr("data-path").await.ok()?
}

async fn wait_node(c: &Client, path: &str) -> Result {
    until(&format!("the node {path}"), || async { node_path(c).await.filter(|p| p == path).map(|_| ()) }).await
}

/// Click the child row `path` of the current node and wait for it.
async fn descend(c: &Client, path: &str) -> Result {
    c.find(Locator::Css(&format!("#children tr[data-path='{path}'] a"))).await.text_err()?.click().await.text_err()?;
    wait_url(c, &format!("at={path}")).await?;
    wait_node(c, path).await
}

/// The Powers of Ten walk-through by clicking: from the model down to a GEMM's tiles, back up by the breadcrumb, and an
/// experiment that changes the intensity.
async fn powers_of_ten(c: &Client, base: &str) -> Result {
    // The reference calculator's scenario (Llama 3 8B, decode, batch 1), then by the navigation.
    c.goto(base).await.text_err()?;
    wait_heading(c, "Overview").await?;
    c.find(Locator::Css("nav a[data-slug='powers-of-ten']")).await.text_err()?.click().await.text_err()?;
    wait_heading(c, "Powers of ten").await?;
    wait_node(c, "model").await?;
    shot(c, "powers-of-ten").await?;
    // Four magnifications: the model, a layer (its operators by block), an operation, its tiles.
    for path in ["layer.0", "layer.0.mlp.up", "layer.0.mlp.up.tiles"] {
        descend(c, path).await?;
    }
    let level = c.find(Locator::Id("node")).await.text_err()?.attr("data-level").await.text_err()?;
    assert_eq!(level.as_deref(), Some("tiles"));
    until("the reuse factor", || data_value(c, "reuse-factor")).await?;
    shot(c, "powers-of-ten-tiles").await?;
    // Back up by the breadcrumb, two levels at once.
    c.find(Locator::Css("#breadcrumb a[data-path='layer.0']")).await.text_err()?.click().await.text_err()?;
    wait_node(c, "layer.0").await?;
    assert!(url(c).await.contains("at=layer.0") && !url(c).await.contains("up"));
    // Switch to prefill: the same node, its intensity up by orders of magnitude.
    let before: f64 = until("the intensity", || data_value(c, "node-intensity")).await?.parse().text_err()?;
    c.find(Locator::Id("exp-phase")).await.text_err()?.click().await.text_err()?;
    let u = wait_url(c, "phase=prefill").await?;
    assert!(u.contains("at=layer.0"), "the experiment keeps the zoom path: {u}");
    let after: f64 = until("the prefill intensity", || async {
        data_value(c, "node-intensity").await.and_then(|v| v.parse().ok()).filter(|v: &f64| (*v - before).abs() > 1e-9)
    })
    .await?;
    assert!(after > 100.0 * before, "decode {before} → prefill {after} FLOP/B");
    // And the whole way back to the model by the breadcrumb.
    c.find(Locator::Css("#breadcrumb a[data-path='model']")).await.text_err()?.click().await.text_err()?;
    wait_node(c, "model").await?;
    Ok(())
}

async fn rows(c: &Client, css: &str) -> usize {
    c.find_all(Locator::Css(css)).await.map(|v| v.len()).unwrap_or(0)
}

/// Batching: a control changes the curve and the table in place.
async fn batching(c: &Client, base: &str) -> Result {
    c.goto(&format!("{base}batching")).await.text_err()?;
    wait_heading(c, "Batching").await?;
    until("the batch curve", || async { c.find(Locator::Css("svg.batch-curve circle.step")).await.ok().map(|_| ()) })
        .await?;
    assert_eq!(rows(c, "#sweep tbody tr").await, 11, "1..1024*2");
    shot(c, "batching").await?;
    c.execute("window.__noReload = 2", vec![]).await.text_err()?;
    let crossover = until("the crossover", || data_value(c, "kv-crossover")).await?;
    // A longer context: the crossover comes at a quarter of the batch.
    c.find(Locator::Id("f-ctx")).await.text_err()?.send_keys("8192\u{E007}").await.text_err()?;
    wait_url(c, "ctx=8192").await?;
    let shorter =
        until("the new crossover", || async { data_value(c, "kv-crossover").await.filter(|v| *v != crossover) })
            .await?;
    let (a, b): (f64, f64) = (crossover.parse().text_err()?, shorter.parse().text_err()?);
    assert!((b * 4.0 / a - 1.0).abs() < 0.01, "crossover {a} at 2,048 tokens, {b} at 8,192");
    // Fewer batch sizes: the table and the curve follow.
    c.find(Locator::Id("f-batches")).await.text_err()?.send_keys("1..64*2\u{E007}").await.text_err()?;
    wait_url(c, "batches=1..64*2").await?;
    until("seven rows", || async { (rows(c, "#sweep tbody tr").await == 7).then_some(()) }).await?;
    assert_eq!(rows(c, "svg.batch-curve:not(.plot-narrow) circle.step").await, 7);
    assert_eq!(rows(c, "svg.batch-curve.plot-narrow circle.step").await, 7, "and the phone's drawing");
    let kept = c.execute("return window.__noReload === 2", vec![]).await.text_err()?;
    assert_eq!(kept, json!(true), "updated without a full reload");
    Ok(())
}

const GPT2_CONFIG: &str = r#"{"model_type": "gpt2", "_name_or_path": "my-gpt2", "n_embd": 768, "n_head": 12,
 "n_layer": 12, "n_positions": 1024, "vocab_size": 50257}"#;

async fn without_javascript(c: &Client, base: &str) -> Result {
    c.goto(&format!("{base}ledger")).await.text_err()?;
    wait_heading(c, "Ledger").await?;
    // The panel of controls opens without the script (a <details>).
    c.find(Locator::Css("#panel > summary")).await.text_err()?.click().await.text_err()?;
    let batch = c.find(Locator::Id("f-batch")).await.text_err()?;
    batch.send_keys("32").await.text_err()?;
    c.find(Locator::Id("f-phase-prefill")).await.text_err()?.click().await.text_err()?;
    c.find(Locator::Css("#controls button[type=submit]")).await.text_err()?.click().await.text_err()?;
    // A plain GET form sends every field; empty ones mean "default".
    let u = wait_url(c, "batch=32").await?;
    assert!(u.contains("phase=prefill") && u.contains("ctx=&"), "{u}");
    let expected = cli_step_time(&[("batch", "32"), ("phase", "prefill")]);
    until("the prefill step time", || async { data_value(c, "step-time").await.filter(|v| *v == expected) }).await?;
    shot(c, "ledger-no-javascript").await
}

async fn dark(c: &Client, base: &str) -> Result {
    c.goto(&format!("{base}ledger?batch=64")).await.text_err()?;
    wait_heading(c, "Ledger").await?;
    let is_dark = c.execute("return matchMedia('(prefers-color-scheme: dark)').matches", vec![]).await.text_err()?;
    assert_eq!(is_dark, json!(true), "the dark session prefers a dark scheme");
    // The plot's text takes the page's light foreground colour.
    let fill = c
        .execute("return getComputedStyle(document.querySelector('svg.roofline text')).fill", vec![])
        .await
        .text_err()?;
    assert_eq!(fill, json!("rgb(230, 237, 243)"), "plot text follows the dark theme");
    shot(c, "ledger-dark").await?;
    let walks: &[(&str, &str)] = &[
        ("powers-of-ten", "?at=layer.0.mlp.up.tiles"),
        ("batching", ""),
        ("", "?model=llama-3.1-405b&gpu=l4"),
        ("models", ""),
        ("gpus", ""),
    ];
    for (slug, query) in walks.iter().chain(PAGE_SHOTS) {
        let page = PAGES.iter().find(|p| p.slug == *slug).expect("a page");
        c.goto(&format!("{base}{slug}{query}")).await.text_err()?;
        wait_heading(c, page.title).await?;
        let name = if slug.is_empty() { "overview" } else { slug };
        shot(c, &format!("{name}-dark")).await?;
    }
    // The picture at model level, dark.
    c.goto(&format!("{base}powers-of-ten")).await.text_err()?;
    wait_heading(c, "Powers of ten").await?;
    shot(c, "powers-of-ten-model-dark").await?;
    Ok(())
}

#[test]
fn the_explorer_works_in_a_real_browser() {
    let (Some(chromium), Some(chromedriver)) = (
        which("LLM_LEDGER_CHROMIUM", &["chromium", "chromium-browser"]),
        which("LLM_LEDGER_CHROMEDRIVER", &["chromedriver"]),
    ) else {
        skip("the browser test needs chromium and chromedriver (apt-get install chromium chromium-driver, or set LLM_LEDGER_CHROMIUM and LLM_LEDGER_CHROMEDRIVER)");
        return;
    };
    let _one = one_browser();
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let outcome: Result = rt.block_on(async {
        let listener = tokio::net::TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0))).await.unwrap();
        let base = format!("http://{}/", listener.local_addr().unwrap());
        tokio::spawn(serve_listener(listener, Arc::new(AppState::builtin()), std::future::pending()));
        let mut driver = Driver::start(&chromedriver)?;
        let mut failures = Vec::new();
        let no_js = json!({ "profile.managed_default_content_settings.javascript": 2 });
        for (name, flags, prefs) in [
            ("with JavaScript", vec![], json!({})),
            ("without JavaScript", vec![], no_js),
            ("dark theme", vec!["--force-dark-mode", "--blink-settings=preferredColorScheme=0"], json!({})),
        ] {
            let c = driver.session(&chromium, &flags, prefs).await?;
            let r = match name {
                "with JavaScript" => with_javascript(&c, &base).await,
                "without JavaScript" => without_javascript(&c, &base).await,
                _ => dark(&c, &base).await,
            };
            if let Err(e) = r {
                let _ = shot(&c, &format!("failure-{}", name.replace(' ', "-"))).await;
                failures.push(format!("{name}: {e} (at {})", url(&c).await));
            }
            let _ = c.close().await;
        }
        if failures.is_empty() {
            Ok(())
        } else {
            Err(failures.join("\n"))
        }
    });
    if let Err(e) = outcome {
        panic!("{e}");
    }
    eprintln!("screenshots: {}", screenshots_dir().display());
}

/// One browser at a time: on two shared cores, parallel browsers starve each other's pointer
/// actions and page loads past any patience.
static ONE_BROWSER: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn one_browser() -> std::sync::MutexGuard<'static, ()> {
    ONE_BROWSER.lock().unwrap_or_else(|e| e.into_inner())
}

/// Run `walk` in a fresh headless browser (with `flags`) against a fresh server; `false` when the
/// browser is missing (the test then says SKIP, and fails in CI).
fn in_browser<F, Fut>(flags: &[&str], walk: F) -> bool
where
    F: FnOnce(Client, String) -> Fut,
    Fut: std::future::Future<Output = Result>,
{
    in_browser_with(AppState::builtin(), Panel::Open, flags, walk)
}

/// Whether a test's browser starts with the panel of controls open (as a reader who opened it
/// once has it: the script remembers) or as a first visit finds it, closed.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Panel {
    Open,
    Closed,
}

/// Open the panel of controls, and have the script remember it for the pages that follow.
async fn open_panel(c: &Client) -> Result {
    c.execute(
        "localStorage.setItem('llm-ledger.panel', 'open'); const p = document.getElementById('panel'); if (p) p.open = true;",
        vec![],
    )
    .await
    .text_err()
    .map(|_| ())
}

/// [`in_browser`] against a server with `state`, the panel as `panel` says.
fn in_browser_with<F, Fut>(state: AppState, panel: Panel, flags: &[&str], walk: F) -> bool
where
    F: FnOnce(Client, String) -> Fut,
    Fut: std::future::Future<Output = Result>,
{
    let (Some(chromium), Some(chromedriver)) = (
        which("LLM_LEDGER_CHROMIUM", &["chromium", "chromium-browser"]),
        which("LLM_LEDGER_CHROMEDRIVER", &["chromedriver"]),
    ) else {
        skip("the browser test needs chromium and chromedriver (apt-get install chromium chromium-driver, or set LLM_LEDGER_CHROMIUM and LLM_LEDGER_CHROMEDRIVER)");
        return false;
    };
    let _one = one_browser();
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let outcome: Result = rt.block_on(async {
        let listener = tokio::net::TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0))).await.unwrap();
        let base = format!("http://{}/", listener.local_addr().unwrap());
        tokio::spawn(serve_listener(listener, Arc::new(state), std::future::pending()));
        let mut driver = Driver::start(&chromedriver)?;
        let c = driver.session(&chromium, flags, json!({})).await?;
        if panel == Panel::Open {
            c.goto(&format!("{base}gpus")).await.text_err()?;
            open_panel(&c).await?;
        }
        let r = walk(c.clone(), base).await;
        if let Err(e) = &r {
            let _ = shot(&c, "failure-issue-15").await;
            let at = url(&c).await;
            let _ = c.close().await;
            return Err(format!("{e} (at {at})"));
        }
        let _ = c.close().await;
        Ok(())
    });
    if let Err(e) = outcome {
        panic!("{e}");
    }
    true
}

/// Every page, with a query that shows what it is for (Powers of ten at its deepest level, a
/// scenario that does not fit).
const EVERY_PAGE: &[(&str, &str)] = &[
    ("", ""),
    ("", "?model=llama-3.1-405b&gpu=l4"),
    ("powers-of-ten", ""),
    ("powers-of-ten", "?at=layer.0.mlp.up.tiles"),
    ("ledger", "?batch=64"),
    ("batching", ""),
    ("kv-cache", "?batch=64"),
    ("cost", "?batch=16&tpot_ms=20"),
    ("serving", "?requests=200"),
    ("gemm-tiling", "?m=1000&n=1000&k=1000"),
    ("moe", "?model=mixtral-8x7b&zipf=1"),
    ("compare", "?s1=batch%3D8&s2=batch%3D64%26kv%3Dfp8&s3=default&s4=batch%3D8%26tp%3D2"),
    ("graph", "?find=up"),
    ("graph", "?model=deepseek-v3&expand=1"),
    ("need", "?model=llama-3-70b&batch=16"),
    ("models", ""),
    ("gpus", ""),
];

/// On a 390 px wide phone no page scrolls sideways (tables and plots scroll in
/// their own boxes, each reachable by keyboard; the cut-off row of page links fades at its edge), and plot text stays legible (at least 8 px as drawn); the line charts are
/// drawn for phones (no text under 10 px, the legend under the plot) in place of the wide ones;
/// a screenshot of each.
#[test]
fn on_a_390_px_phone_no_page_scrolls_sideways() {
    in_browser(&[], |c, base| async move {
        c.set_window_size(390, 844).await.text_err()?;
        let inner = c.execute("return window.innerWidth", vec![]).await.text_err()?;
        assert_eq!(inner, json!(390), "the window is a phone's width");
        for (i, (slug, query)) in EVERY_PAGE.iter().enumerate() {
            let page = PAGES.iter().find(|p| p.slug == *slug).expect("a page");
            c.goto(&format!("{base}{slug}{query}")).await.text_err()?;
            wait_heading(&c, page.title).await?;
            let widths = c
                .execute("return [document.documentElement.scrollWidth, window.innerWidth]", vec![])
                .await
                .text_err()?;
            let (scroll, inner) = (widths[0].as_u64().unwrap_or(0), widths[1].as_u64().unwrap_or(0));
            if scroll > inner {
                // Name the widest elements, for the failure message.
                let wide = c
                    .execute(
                        "return [...document.querySelectorAll('body *')].filter(e => e.getBoundingClientRect().right > innerWidth + 1) \
                           .slice(0, 8).map(e => e.tagName + '.' + e.className + '#' + e.id + ' ' + Math.round(e.getBoundingClientRect().right))",
                        vec![],
                    )
                    .await
                    .text_err()?;
                panic!("/{slug}{query} is {scroll} px wide on a {inner} px screen: {wide}");
            }
            let smallest = c
                .execute(
                    "let m = 1e9; for (const t of document.querySelectorAll('svg.plot text')) { \
                       const r = t.getBoundingClientRect(); if (r.height > 0) m = Math.min(m, r.height); } return m",
                    vec![],
                )
                .await
                .text_err()?;
            let px = smallest.as_f64().unwrap_or(0.0);
            assert!(px >= 8.0, "/{slug}{query}: plot text {px} px high");
            // A plot drawn for phones shows in place of the wide one: no text under 10 px as
            // drawn, and its legend under the plot (below every other text and mark).
            let narrow = c
                .execute(
                    "const bad = []; let shown = 0; \
                     for (const svg of document.querySelectorAll('svg.plot.plot-narrow')) { \
                       const box = svg.getBoundingClientRect(); if (box.width === 0) continue; shown++; \
                       const k = box.width / svg.viewBox.baseVal.width; \
                       const legend = svg.querySelector('g.legend'); \
                       if (!legend) { bad.push(svg.className.baseVal + ': no legend'); continue; } \
                       const top = legend.getBoundingClientRect().top; \
                       for (const t of svg.querySelectorAll('text')) { \
                         const px = parseFloat(getComputedStyle(t).fontSize) * k; \
                         if (px < 10) bad.push(svg.className.baseVal + ': ' + t.textContent.trim() + ' at ' + px.toFixed(1) + ' px'); \
                         if (!legend.contains(t) && t.getBoundingClientRect().bottom > top + 1) \
                           bad.push(svg.className.baseVal + ': ' + t.textContent.trim() + ' below the legend'); } \
                       for (const m of svg.querySelectorAll('circle')) \
                         if (!legend.contains(m) && m.getBoundingClientRect().bottom > top + 1) \
                           bad.push(svg.className.baseVal + ': a mark below the legend'); } \
                     const wide = [...document.querySelectorAll('figure.two-sizes svg.plot:not(.plot-narrow)')] \
                       .filter(s => s.getBoundingClientRect().width > 0).length; \
                     return [shown, wide, bad.slice(0, 8)]",
                    vec![],
                )
                .await
                .text_err()?;
            // Every box that scrolls sideways takes the keyboard's focus (its arrow keys scroll
            // it), and the row of page links, cut off at the right, fades there.
            let scrollers = c
                .execute(
                    "return [[...document.querySelectorAll('table, figure.plot, nav.pages ul')]                        .filter(e => e.scrollWidth > e.clientWidth + 1 && e.getAttribute('tabindex') !== '0')                        .map(e => e.tagName + '#' + e.id),                      document.querySelector('nav.pages ul').classList.contains('more')]",
                    vec![],
                )
                .await
                .text_err()?;
            assert_eq!(scrollers, json!([[], true]), "/{slug}{query}: scrolling boxes without focus, page links faded");
            assert_eq!(narrow[1], json!(0), "/{slug}{query}: a wide plot shown on a phone");
            assert_eq!(narrow[2], json!([]), "/{slug}{query}: {narrow}");
            if ["ledger", "batching", "kv-cache", "moe", "serving", "need"].contains(slug) {
                assert!(narrow[0].as_u64().unwrap_or(0) >= 1, "/{slug}{query}: no plot drawn for phones");
            }
            let table = match *slug {
                "ledger" => Some("ledger"),
                "powers-of-ten" => Some("children"),
                _ => None,
            };
            if let Some(table) = table {
                // The time and the share come right after the operator, under their headings,
                // and over the footer's cells.
                let at = c
                    .execute(
                        "const x = e => e ? Math.round(e.getBoundingClientRect().left) : -1; \
                         const t = document.getElementById(arguments[0]); \
                         const row = t.querySelector('tbody tr:not(.block-heading)'); const foot = t.querySelector('tfoot tr'); \
                         return [x(row.children[0]), x(row.querySelector('.time')), x(row.querySelector('.share')), \
                                 x(row.children[1]), x(t.querySelector('thead .time')), x(t.querySelector('thead .share')), \
                                 foot ? x(foot.querySelector('.time')) : x(row.querySelector('.time')), \
                                 foot ? x(foot.querySelector('.share')) : x(row.querySelector('.share'))]",
                        vec![json!(table)],
                    )
                    .await
                    .text_err()?;
                let at: Vec<i64> = at.as_array().unwrap().iter().map(|v| v.as_i64().unwrap_or(-1)).collect();
                assert!(at[0] < at[1] && at[1] < at[2] && at[2] < at[3], "/{slug}{query} on a phone: {at:?}");
                assert_eq!((at[4], at[5]), (at[1], at[2]), "/{slug}{query}: the headings over their columns: {at:?}");
                assert_eq!((at[6], at[7]), (at[1], at[2]), "/{slug}{query}: the footer under its columns: {at:?}");
            }
            let name = if slug.is_empty() { "overview" } else { slug };
            shot_at(&c, &format!("phone-{i:02}-{name}"), 390, 844).await?;
        }
        Ok(())
    });
}

/// Drag the slider `id` by `dx` pixels from its left end, and let go.
async fn drag(c: &Client, id: &str, dx: f64) -> Result {
    press_and_move(c, id, dx).await?;
    let_go(c).await
}

/// Let go of the mouse button.
async fn let_go(c: &Client) -> Result {
    use fantoccini::actions::{InputSource, MouseActions, PointerAction, MOUSE_BUTTON_LEFT};
    let up = MouseActions::new("mouse".into()).then(PointerAction::Up { button: MOUSE_BUTTON_LEFT });
    c.perform_actions(up).await.text_err()?;
    c.release_actions().await.text_err()
}

/// Press on the slider `id` at its left end and move `dx` pixels, holding the button.
async fn press_and_move(c: &Client, id: &str, dx: f64) -> Result {
    use fantoccini::actions::{InputSource, MouseActions, PointerAction, MOUSE_BUTTON_LEFT};
    let slider = c.find(Locator::Id(id)).await.text_err()?;
    let width = c
        .execute("return document.getElementById(arguments[0]).getBoundingClientRect().width", vec![json!(id)])
        .await
        .text_err()?
        .as_f64()
        .unwrap_or(200.0);
    let mut mouse = MouseActions::new("mouse".into())
        .then(PointerAction::MoveToElement { element: slider, duration: None, x: -width / 2.0 + 6.0, y: 0.0 })
        .then(PointerAction::Down { button: MOUSE_BUTTON_LEFT });
    // In steps, as a hand drags: each step is an `input` event.
    for _ in 0..8 {
        mouse = mouse.then(PointerAction::MoveBy { duration: Some(Duration::from_millis(60)), x: dx / 8.0, y: 0.0 });
    }
    c.perform_actions(mouse).await.text_err()
}

/// Dragging the batch slider updates the numbers while it moves and the URL
/// follows (one history entry per drag: back returns to before it), without a full reload; the
/// toggles switch FlashAttention and the phase in one click.
#[test]
fn dragging_a_slider_updates_the_numbers_and_the_url() {
    in_browser(&[], |c, base| async move {
        c.goto(&base).await.text_err()?;
        wait_heading(&c, "Overview").await?;
        let first = until("the step time", || data_value(&c, "step-time")).await?;
        c.execute("window.__noReload = 1", vec![]).await.text_err()?;
        let slider = c.find(Locator::Id("f-batch-slider")).await.text_err()?;
        assert!(slider.is_displayed().await.text_err()?, "the script shows the slider");
        // Watch the step time change during the drag (a MutationObserver counts the updates).
        c.execute(
            "window.__updates = 0; new MutationObserver(ms => { for (const m of ms) for (const n of m.addedNodes) if (n.id === 'content') window.__updates++; }).observe(document.body, {childList: true, subtree: true})",
            vec![],
        )
        .await
        .text_err()?;
        // Still holding the slider: the numbers and the URL follow before it is let go.
        press_and_move(&c, "f-batch-slider", 120.0).await?;
        until("an update during the drag", || async {
            c.execute("return window.__updates", vec![]).await.ok()?.as_u64().filter(|n| *n >= 1)
        })
        .await?;
        let held = wait_url(&c, "batch=").await?;
        let_go(&c).await?;
        let u = wait_url(&c, "batch=").await?;
        assert!(held.contains("batch="), "{held}");
        // Read in one script (the page may be swapped in between a find and a read).
        let batch = c
            .execute("return document.getElementById('f-batch').value", vec![])
            .await
            .text_err()?
            .as_str()
            .unwrap_or_default()
            .to_string();
        let n: u64 = batch.parse().map_err(|e| format!("batch {batch:?}: {e}"))?;
        assert!(n > 1, "the drag raised the batch: {n}");
        until("the URL of the batch shown", || async {
            Some(url(&c).await).filter(|u| u.contains(&format!("batch={n}")))
        })
        .await?;
        let expected = cli_step_time(&[("batch", &batch)]);
        until("the dragged batch's step time", || async {
            data_value(&c, "step-time").await.filter(|v| *v == expected)
        })
        .await?;
        assert_ne!(expected, first);
        let kept = c.execute("return window.__noReload === 1", vec![]).await.text_err()?;
        assert_eq!(kept, json!(true), "no full reload: {u}");
        let ms = c.execute("return window.__lastUpdateMs", vec![]).await.text_err()?;
        eprintln!("last live update took {ms} ms in the browser (debug build)");
        // Back: before the drag, in one step.
        c.back().await.text_err()?;
        until("the URL before the drag", || async { Some(url(&c).await).filter(|u| !u.contains("batch=")) }).await?;
        until("the numbers before the drag", || async { data_value(&c, "step-time").await.filter(|v| *v == first) })
            .await?;
        // The toggles: FlashAttention off, then prefill, one click each.
        until("the toggle", || async { c.find(Locator::Id("f-flash-off")).await.ok()?.click().await.ok() }).await?;
        wait_url(&c, "flash=off").await?;
        let expected = cli_step_time(&[("flash", "off")]);
        until("the unfused step time", || async { data_value(&c, "step-time").await.filter(|v| *v == expected) })
            .await?;
        until("the toggle", || async { c.find(Locator::Id("f-phase-prefill")).await.ok()?.click().await.ok() }).await?;
        let u = wait_url(&c, "phase=prefill").await?;
        assert!(u.contains("flash=off"), "{u}");
        Ok(())
    });
}

/// Click the picture's block (or the tile grid's link) for `path` and wait for its level.
async fn click_picture(c: &Client, path: &str) -> Result {
    let css = format!("#picture a[data-path='{path}']");
    let a = until(&format!("the picture's link to {path}"), || async { c.find(Locator::Css(&css)).await.ok() }).await?;
    a.click().await.text_err()?;
    wait_url(c, &format!("at={path}")).await?;
    wait_node(c, path).await
}

/// From the model to a GEMM's tiles by clicking the picture (identical
/// layers are one block; the layer shows its operators; the operator is its tile grid), back by
/// the breadcrumb; and a control changed at a deep zoom keeps the deepest level that exists and
/// says why.
#[test]
fn zoom_by_the_picture_and_keep_a_valid_level_when_a_control_changes() {
    in_browser(&[], |c, base| async move {
        c.goto(&format!("{base}powers-of-ten")).await.text_err()?;
        wait_node(&c, "model").await?;
        let grouped =
            c.find(Locator::Css("#picture a[data-path='layer.0']")).await.text_err()?.text().await.text_err()?;
        assert!(grouped.contains("× 32"), "identical layers are one block: {grouped:?}");
        shot(&c, "powers-of-ten-picture").await?;
        click_picture(&c, "layer.0").await?;
        click_picture(&c, "layer.0.mlp.up").await?;
        until("the tile grid", || async { c.find(Locator::Css("#picture svg.tile-grid rect.reread-tile")).await.ok() })
            .await?;
        click_picture(&c, "layer.0.mlp.up.tiles").await?;
        until("the reuse factor", || data_value(&c, "reuse-factor")).await?;
        shot(&c, "powers-of-ten-picture-tiles").await?;
        c.find(Locator::Css("#breadcrumb a[data-path='model']")).await.text_err()?.click().await.text_err()?;
        wait_node(&c, "model").await?;
        // Expand the layers, then size by bytes: the keys travel with the zoom.
        c.find(Locator::Id("expand-layers")).await.text_err()?.click().await.text_err()?;
        wait_url(&c, "expand=1").await?;
        until("32 layer blocks", || async {
            (rows(&c, "#picture a[data-path^='layer.'][data-path$='.mlp.down']").await == 32).then_some(())
        })
        .await?;
        c.find(Locator::Css("#picture a.size[data-size='bytes']")).await.text_err()?.click().await.text_err()?;
        let u = wait_url(&c, "size=bytes").await?;
        assert!(u.contains("expand=1"), "{u}");
        // A deep zoom, then FlashAttention off: the fused operator is gone; its block is shown.
        c.goto(&format!("{base}powers-of-ten?at=layer.0.attn.attention.tiles")).await.text_err()?;
        wait_node(&c, "layer.0.attn.attention.tiles").await?;
        c.find(Locator::Id("f-flash-off")).await.text_err()?.click().await.text_err()?;
        wait_url(&c, "flash=off").await?;
        wait_node(&c, "layer.0.attn").await?;
        let notice = c.find(Locator::Id("zoom-notice")).await.text_err()?.text().await.text_err()?;
        assert!(notice.contains("FlashAttention is off"), "{notice}");
        assert!(c.find(Locator::Id("error")).await.is_err(), "no error page");
        // A MoE model while at the up-projection: the MLP block is kept.
        c.goto(&format!("{base}powers-of-ten?at=layer.0.mlp.up")).await.text_err()?;
        wait_node(&c, "layer.0.mlp.up").await?;
        c.find(Locator::Id("f-model")).await.text_err()?.select_by_value("mixtral-8x7b").await.text_err()?;
        wait_url(&c, "model=mixtral-8x7b").await?;
        wait_node(&c, "layer.0.mlp").await?;
        shot(&c, "powers-of-ten-kept-level").await?;
        Ok(())
    });
}

/// The layer's dataflow fuses and splits attention in one click, and a box
/// zooms into its operator; the diagram fits a phone.
#[test]
fn the_dataflow_splits_attention_and_zooms_into_an_operator() {
    in_browser(&[], |c, base| async move {
        c.set_window_size(390, 844).await.text_err()?;
        c.goto(&format!("{base}powers-of-ten?at=layer.0&phase=prefill&ctx=512")).await.text_err()?;
        wait_node(&c, "layer.0").await?;
        c.find(Locator::Css("#dataflow a[data-path='layer.0.attn.attention']")).await.text_err()?;
        c.find(Locator::Id("flash-toggle")).await.text_err()?.click().await.text_err()?;
        wait_url(&c, "flash=off").await?;
        let scores = until("the split attention", || async {
            c.find(Locator::Css("#dataflow a[data-path='layer.0.attn.scores']")).await.ok()
        })
        .await?;
        let arrow = c.find(Locator::Css("#dataflow g.flow-arrow[data-to='layer.0.attn.softmax']")).await.text_err()?;
        assert!(arrow.text().await.text_err()?.contains("score matrix"));
        let widths =
            c.execute("return [document.documentElement.scrollWidth, window.innerWidth]", vec![]).await.text_err()?;
        assert!(widths[0].as_u64() <= widths[1].as_u64(), "no sideways scroll: {widths}");
        let smallest = c
            .execute(
                "let m = 1e9; for (const t of document.querySelectorAll('svg.dataflow text')) { \
                   const r = t.getBoundingClientRect(); if (r.height > 0) m = Math.min(m, r.height); } return m",
                vec![],
            )
            .await
            .text_err()?;
        let px = smallest.as_f64().unwrap_or(0.0);
        assert!((10.0..1e9).contains(&px), "the diagram's text is legible on a phone: {px} px high");
        shot_at(&c, "phone-powers-of-ten-dataflow", 390, 844).await?;
        scores.click().await.text_err()?;
        wait_url(&c, "at=layer.0.attn.scores").await?;
        wait_node(&c, "layer.0.attn.scores").await
    });
}

/// Pin a scenario, drag the batch: the node's numbers show their change against
/// the pin; the INT4 experiment's flip shows memory-bound against compute-bound in one click.
#[test]
fn pin_and_compare() {
    in_browser(&[], |c, base| async move {
        c.goto(&format!("{base}powers-of-ten?at=layer.0.mlp.up")).await.text_err()?;
        wait_node(&c, "layer.0.mlp.up").await?;
        c.find(Locator::Id("pin")).await.text_err()?.click().await.text_err()?;
        wait_url(&c, "pin=default").await?;
        until("the pin bar", || async { c.find(Locator::Id("unpin")).await.ok() }).await?;
        drag(&c, "f-batch-slider", 120.0).await?;
        wait_url(&c, "batch=").await?;
        let ratio = until("the time against the pin", || async {
            c.find(Locator::Id("node-flops-delta")).await.ok()?.attr("data-ratio").await.ok()?
        })
        .await?;
        let r: f64 = ratio.parse().text_err()?;
        assert!(r > 1.0, "more batch, more FLOPs than the pinned batch 1: ×{r}");
        let u = url(&c).await;
        assert!(u.contains("pin=default") && u.contains("at=layer.0.mlp.up"), "{u}");
        shot(&c, "powers-of-ten-pinned").await?;
        // The walk-through's INT4 experiment at the batch where the flip happens, against the pin.
        c.goto(&format!("{base}powers-of-ten")).await.text_err()?;
        wait_node(&c, "model").await?;
        c.find(Locator::Id("cmp-int4-flip")).await.text_err()?.click().await.text_err()?;
        wait_url(&c, "weights=int4").await?;
        let flip = until("the flipped bound", || async { c.find(Locator::Id("bound-flip")).await.ok() }).await?;
        assert!(flip.text().await.text_err()?.contains("memory-bound"));
        let bound = c.find(Locator::Id("node-bound")).await.text_err()?.attr("data-bound").await.text_err()?;
        assert_eq!(bound.as_deref(), Some("compute"));
        shot(&c, "powers-of-ten-int4-flip").await?;
        Ok(())
    });
}

#[test]
fn ci_means_set_and_not_empty_0_or_false() {
    for (v, ci) in [
        (None, false),
        (Some(""), false),
        (Some("0"), false),
        (Some("false"), false),
        (Some("FALSE"), false),
        (Some("1"), true),
        (Some("true"), true),
        (Some("yes"), true),
    ] {
        assert_eq!(is_ci(v), ci, "CI={v:?}");
    }
}

/// The browser test without a browser, run as its own process (the SKIP line is the process's
/// stderr, not the harness's captured output): it says SKIP, passes, and fails in CI.
#[test]
fn without_a_browser_the_test_says_skip_and_fails_in_ci() {
    let exe = std::env::current_exe().expect("this test's executable");
    for (ci, passes) in [(None, true), (Some("0"), true), (Some("1"), false), (Some("true"), false)] {
        let mut cmd = Command::new(&exe);
        cmd.args(["the_explorer_works_in_a_real_browser", "--exact", "--test-threads=1"])
            .env("LLM_LEDGER_CHROMIUM", "/nonexistent/chromium")
            .env("LLM_LEDGER_CHROMEDRIVER", "/nonexistent/chromedriver")
            .env_remove("CI")
            .stdin(Stdio::null());
        if let Some(v) = ci {
            cmd.env("CI", v);
        }
        let out = cmd.output().expect("run the test binary");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("SKIP: the browser test needs chromium and chromedriver"), "CI={ci:?}: {stderr}");
        assert_eq!(out.status.success(), passes, "CI={ci:?}: {stderr}\n{}", String::from_utf8_lossy(&out.stdout));
    }
}

/// Move the mouse onto the element `css`.
async fn hover(c: &Client, css: &str) -> Result {
    use fantoccini::actions::{InputSource, MouseActions, PointerAction};
    let el = c.find(Locator::Css(css)).await.map_err(|e| format!("{css}: {e}"))?;
    let mouse = MouseActions::new("mouse".into()).then(PointerAction::MoveToElement {
        element: el,
        duration: None,
        x: 0.0,
        y: 0.0,
    });
    c.perform_actions(mouse).await.text_err()?;
    c.release_actions().await.text_err()
}

/// Tap the element `css` with a finger.
async fn tap(c: &Client, css: &str) -> Result {
    use fantoccini::actions::{InputSource, PointerAction, TouchActions, MOUSE_BUTTON_LEFT};
    let el = c.find(Locator::Css(css)).await.map_err(|e| format!("{css}: {e}"))?;
    let finger = TouchActions::new("finger".into())
        .then(PointerAction::MoveToElement { element: el, duration: None, x: 0.0, y: 0.0 })
        .then(PointerAction::Down { button: MOUSE_BUTTON_LEFT })
        .then(PointerAction::Up { button: MOUSE_BUTTON_LEFT });
    c.perform_actions(finger).await.text_err()?;
    c.release_actions().await.text_err()
}

/// The styled tooltip's text, when it shows.
async fn tip_text(c: &Client) -> Option<String> {
    let v = c
        .execute("const t = document.getElementById('plot-tip'); return t && !t.hidden ? t.textContent : null", vec![])
        .await
        .ok()?;
    v.as_str().map(String::from)
}

/// Time from an `input` event on the slider `id` to the page's content swapped in (and to the
/// next frame), over the slider values `steps`, in the browser's own clock: [DOM ms, frame ms,
/// the fetch's ms (request to the answer's last byte), ms from the event to the fetch].
async fn update_times(c: &Client, id: &str, steps: &[f64]) -> Result<Vec<[f64; 4]>> {
    let script = r#"
        const [id, steps, done] = [arguments[0], arguments[1], arguments[arguments.length - 1]];
        const slider = document.getElementById(id);
        const times = [];
        let i = 0;
        function next() {
          if (i >= steps.length) return done(times);
          const before = document.getElementById("content");
          const obs = new MutationObserver(() => {
            if (document.getElementById("content") === before) return;
            obs.disconnect();
            const dom = performance.now() - t0;
            const f = performance.getEntriesByType("resource").filter(r => r.initiatorType === "fetch").pop();
            const fetchMs = f && f.startTime >= t0 ? f.responseEnd - f.startTime : NaN;
            const waitMs = f && f.startTime >= t0 ? f.startTime - t0 : NaN;
            requestAnimationFrame(() => { times.push([dom, performance.now() - t0, fetchMs, waitMs]); setTimeout(next, 40); });
          });
          obs.observe(document.body, { childList: true, subtree: true });
          slider.value = String(steps[i++]);
          const t0 = performance.now();
          slider.dispatchEvent(new Event("input", { bubbles: true }));
        }
        next();
    "#;
    let v = c.execute_async(script, vec![json!(id), json!(steps)]).await.text_err()?;
    let size = c.execute("const f = performance.getEntriesByType('resource').filter(r => r.initiatorType === 'fetch').pop(); return [f && f.decodedBodySize, document.getElementById('content').getElementsByTagName('*').length]", vec![]).await.text_err()?;
    use std::io::Write;
    let _ = writeln!(
        std::io::stderr(),
        "live update: the last answer was {} B of HTML, the new content {} elements",
        size[0],
        size[1]
    );
    let times = v.as_array().ok_or("no times")?;
    Ok(times.iter().map(|t| [0, 1, 2, 3].map(|i| t[i].as_f64().unwrap_or(f64::NAN))).collect())
}

/// Hovering a roofline point shows its numbers in the styled tooltip and
/// clicking it goes to its operator's row; a tap shows the numbers first and a second tap follows
/// the link; a batch-curve point goes to its batch. Item 3: the time from a slider's `input` event
/// to the updated page, per page, printed (never asserted: a timing on shared cores).
#[test]
fn plot_points_show_their_numbers_and_go_where_they_stand_for() {
    // Every update is made anew: the server's cache of recent answers is off, so a slider
    // position seen before is not answered from it.
    in_browser_with(uncached(), Panel::Open, &[], |c, base| async move {
        c.goto(&format!("{base}ledger?batch=64")).await.text_err()?;
        wait_heading(&c, "Ledger").await?;
        let sc =
            ScenarioRequest { batch: Some("64".into()), ..Default::default() }.resolve(&Catalog::builtin()).unwrap();
        let report = LedgerReport::new(&sc, &Ledger::build(&sc));
        let op = "attention";
        let row = report.rows.iter().find(|r| r.op == op).ok_or("no attention row")?;
        let css = format!("svg.roofline a[href$='#op-{op}'] circle.op");
        hover(&c, &css).await?;
        let text = until("the tooltip", || tip_text(&c)).await?;
        assert!(text.starts_with(&format!("{op} × {}", row.layers)), "{text}");
        assert!(text.contains(&llm_ledger_report::human::flops(row.flops)), "{text}");
        assert!(text.contains(&llm_ledger_report::human::seconds(row.roofline_time_s)), "{text}");
        // The browser's own tooltip does not double it: the title became the mark's data.
        let moved = c
            .execute("const m = document.querySelector(arguments[0]); return [m.querySelector('title') === null, m.dataset.tip]", vec![json!(css)])
            .await
            .text_err()?;
        assert_eq!(moved[0], json!(true), "the hovered mark's <title> is gone");
        assert_eq!(moved[1], json!(text), "its text is the tooltip's");
        let png = c.screenshot().await.text_err()?;
        std::fs::write(screenshots_dir().join("issue-15-roofline-tooltip.png"), png).text_err()?;
        c.find(Locator::Css(&css)).await.text_err()?.click().await.text_err()?;
        wait_url(&c, &format!("#op-{op}")).await?;
        let target = c.execute("const t = document.querySelector('tr.is-target'); return t && t.id", vec![]).await;
        assert_eq!(target.text_err()?, json!(format!("op-{op}")), "the operator's row is marked");
        let seen = c
            .execute("const r = document.getElementById(arguments[0]).getBoundingClientRect(); return r.top >= 0 && r.bottom <= innerHeight", vec![json!(format!("op-{op}"))])
            .await
            .text_err()?;
        assert_eq!(seen, json!(true), "the row is scrolled into view");

        // A finger: the first tap shows the numbers and stays, the second follows the link.
        c.goto(&format!("{base}batching?ctx=4096")).await.text_err()?;
        wait_heading(&c, "Batching").await?;
        let point = "svg.batch-curve a[href*='batch=32&'] circle.step";
        tap(&c, point).await?;
        let text = until("the tooltip after a tap", || tip_text(&c)).await?;
        let png = c.screenshot().await.text_err()?;
        std::fs::write(screenshots_dir().join("issue-15-batch-curve-tap.png"), png).text_err()?;
        assert!(text.starts_with("batch 32\n"), "{text}");
        assert!(!url(&c).await.contains("batch=32&"), "the first tap does not navigate");
        tap(&c, point).await?;
        let u = wait_url(&c, "batch=32").await?;
        assert!(u.contains("ctx=4096"), "{u}");
        until("batch 32 marked in the table", || async {
            c.find(Locator::Css("tr[data-batch='32'][aria-current='true']")).await.ok().map(|_| ())
        })
        .await?;

        // Item 3: the live update's time, input event to new content, per page.
        let mut report_lines = Vec::new();
        for (path, slider) in [
            ("", "f-batch-slider"),
            ("ledger", "f-batch-slider"),
            ("powers-of-ten", "f-batch-slider"),
            ("powers-of-ten?at=layer.0.mlp.up.tiles", "f-ctx-slider"),
            ("batching", "f-ctx-slider"),
            ("kv-cache", "f-batch-slider"),
        ] {
            c.goto(&format!("{base}{path}")).await.text_err()?;
            until("the slider", || async {
                c.find(Locator::Id(slider)).await.ok()?.is_displayed().await.ok().filter(|d| *d)
            })
            .await?;
            // Twelve positions of a drag: batch 4 … 181, context 512 … 23,170.
            let from = if slider == "f-ctx-slider" { 9.0 } else { 2.0 };
            let steps: Vec<f64> = (0..12).map(|i| from + i as f64 * 0.5).collect();
            let t = update_times(&c, slider, &steps).await?;
            let sorted = |i: usize| {
                let mut v: Vec<f64> = t.iter().map(|x| x[i]).collect();
                v.sort_by(f64::total_cmp);
                v
            };
            let (dom, frame, fetch, wait) = (sorted(0), sorted(1), sorted(2), sorted(3));
            let (n, med) = (dom.len(), |v: &[f64]| v[v.len() / 2]);
            report_lines.push(format!(
                "/{path} ({slider}, {n} updates): input → new content median {:.1} ms, max {:.1} ms; → next frame median {:.1} ms, max {:.1} ms; of which waiting to send median {:.1} ms, the fetch median {:.1} ms (max {:.1})",
                med(&dom),
                dom[n - 1],
                med(&frame),
                frame[n - 1],
                med(&wait),
                med(&fetch),
                fetch[n - 1]
            ));
        }
        use std::io::Write;
        for l in report_lines {
            let _ = writeln!(std::io::stderr(), "live update: {l}");
        }
        Ok(())
    });
}

/// The explorer without its cache of recent answers: every answer is made (for what is timed).
fn uncached() -> AppState {
    AppState { limits: Limits { response_cache_bytes: 0, ..Limits::default() }, ..AppState::builtin() }
}

/// Where the page's first result starts, in CSS pixels from the top of the document, and what it
/// is: the first of the main content's summaries, tables, figures, notices and errors.
async fn first_result(c: &Client) -> Result<(f64, String)> {
    let v = c
        .execute(
            "const m = document.getElementById('content'); \
             const r = m && m.querySelector('dl.summary, table, figure, ol.graph, .notice, #error, #cheapest, section.addup'); \
             if (!r) return null; \
             return [r.getBoundingClientRect().top + scrollY, r.tagName + '.' + r.className + '#' + r.id];",
            vec![],
        )
        .await
        .text_err()?;
    let top = v[0].as_f64().ok_or_else(|| format!("no result on the page: {v}"))?;
    Ok((top, v[1].as_str().unwrap_or("").to_string()))
}

/// The result first: on a 390 × 844 phone and a 1440 × 900 laptop, every page's
/// first result starts within the first screen (with the panel of controls as a first visit
/// finds it, folded under the scenario's bar), and on a phone no page scrolls sideways; a
/// screenshot of each at the phone's size. The positions are printed.
#[test]
fn the_first_result_is_on_the_first_screen_of_every_page() {
    in_browser_with(AppState::builtin(), Panel::Closed, &[], |c, base| async move {
        let mut lines = Vec::new();
        let mut tiny = Vec::new();
        for (w, h) in [(390u32, 844u32), (1440, 900)] {
            c.set_window_size(w, h).await.text_err()?;
            let inner = c.execute("return [innerWidth, innerHeight]", vec![]).await.text_err()?;
            let screen = inner[1].as_f64().unwrap_or(f64::from(h));
            for (i, (slug, query)) in EVERY_PAGE.iter().enumerate() {
                let page = PAGES.iter().find(|p| p.slug == *slug).expect("a page");
                c.goto(&format!("{base}{slug}{query}")).await.text_err()?;
                wait_heading(&c, page.title).await?;
                let (top, what) = first_result(&c).await?;
                lines.push(format!("{w}×{h} /{slug}{query}: the first result ({what}) at {top:.0} px"));
                {
                    // No plot's text is drawn under 10 px (a plot wider than its column scrolls
                    // in its box rather than shrink its labels).
                    let small = c
                        .execute(
                            "const bad = []; \
                             for (const svg of document.querySelectorAll('svg.plot')) { \
                               const box = svg.getBoundingClientRect(); if (box.width === 0 || !svg.viewBox.baseVal) continue; \
                               const k = box.width / svg.viewBox.baseVal.width; \
                               for (const t of svg.querySelectorAll('text')) { \
                                 const px = parseFloat(getComputedStyle(t).fontSize) * k; \
                                 if (px < 9.95) bad.push(svg.className.baseVal + ': ' + t.textContent.trim().slice(0, 30) + ' at ' + px.toFixed(1) + ' px'); } } \
                             return bad.slice(0, 6)",
                            vec![],
                        )
                        .await
                        .text_err()?;
                    if small != json!([]) {
                        tiny.push(format!("/{slug}{query} at {w}×{h}: {small}"));
                    }
                }
                // At least 60 px of it on the first screen.
                assert!(top + 60.0 <= screen, "/{slug}{query} at {w}×{h}: the first result ({what}) starts at {top:.0} px, past the {screen} px screen");
                if w == 390 {
                    let name = if slug.is_empty() { "overview" } else { slug };
                    shot_at(&c, &format!("phone-first-{i:02}-{name}"), w, h).await?;
                }
            }
        }
        assert!(tiny.is_empty(), "plot text under 10 px: {tiny:#?}");
        // The panel opens from the bar, at the control, and stays open on the next page.
        c.set_window_size(390, 844).await.text_err()?;
        c.goto(&format!("{base}ledger")).await.text_err()?;
        wait_heading(&c, "Ledger").await?;
        c.find(Locator::Css("#scenario-bar a[data-control='f-batch']")).await.text_err()?.click().await.text_err()?;
        let focused = until("the batch box focused", || async {
            c.execute("return document.activeElement && document.activeElement.id", vec![])
                .await
                .ok()
                .filter(|v| v == "f-batch")
        })
        .await?;
        assert_eq!(focused, json!("f-batch"));
        c.find(Locator::Css("nav a[data-slug='kv-cache']")).await.text_err()?.click().await.text_err()?;
        wait_heading(&c, "KV cache").await?;
        let open = c.execute("return document.getElementById('panel').open", vec![]).await.text_err()?;
        assert_eq!(open, json!(true), "the open panel is remembered");
        // ... and the page opens at its result, the open panel above it.
        let (top, what) = first_result(&c).await?;
        let shown = c.execute("return [scrollY, innerHeight]", vec![]).await.text_err()?;
        let (scrolled, screen) = (shown[0].as_f64().unwrap_or(0.0), shown[1].as_f64().unwrap_or(0.0));
        assert!(
            top - scrolled >= 0.0 && top - scrolled + 60.0 <= screen,
            "with the panel open the first result ({what}) is at {top:.0} px, the screen shows {scrolled:.0}–{:.0}",
            scrolled + screen
        );
        use std::io::Write;
        for l in lines {
            let _ = writeln!(std::io::stderr(), "first result: {l}");
        }
        Ok(())
    });
}

/// While zoomed the path sticks to the top of the screen: a zoom from deep in the
/// page puts the path at the top with the new node under it, scrolling on keeps it there, and
/// "See the flip →" shows the flipped node.
#[test]
fn the_zoom_path_sticks_to_the_top() {
    in_browser(&[], |c, base| async move {
        c.set_window_size(1440, 900).await.text_err()?;
        c.goto(&format!("{base}powers-of-ten")).await.text_err()?;
        wait_node(&c, "model").await?;
        let rect = |id: &'static str| {
            let c = c.clone();
            async move {
                let v = c
                    .execute(
                        "const r = document.getElementById(arguments[0]).getBoundingClientRect(); return [r.top, r.bottom]",
                        vec![json!(id)],
                    )
                    .await
                    .text_err()?;
                Ok::<_, String>((v[0].as_f64().unwrap_or(f64::NAN), v[1].as_f64().unwrap_or(f64::NAN)))
            }
        };
        // A row far down the table: the zoom scrolls the path to the top, the node under it.
        c.execute(
            "document.querySelector(\"#children tr[data-path='layer.0'] a\").scrollIntoView({block: 'end'})",
            vec![],
        )
        .await
        .text_err()?;
        descend(&c, "layer.0").await?;
        for path in ["layer.0.mlp.up", "layer.0.mlp.up.tiles"] {
            c.execute("window.scrollTo(0, document.documentElement.scrollHeight)", vec![]).await.text_err()?;
            c.execute(&format!("document.querySelector(\"#children tr[data-path='{path}'] a\").click()"), vec![])
                .await
                .text_err()?;
            wait_node(&c, path).await?;
            let (top, _) = rect("zoom-path").await?;
            assert!(top.abs() <= 1.0, "after the zoom to {path} the path is at the top: {top}");
            let (node_top, _) = rect("node").await?;
            assert!(node_top > 0.0 && node_top < 300.0, "the node shows under the path: {node_top}");
        }
        c.execute("window.scrollBy(0, 900)", vec![]).await.text_err()?;
        let (top, bottom) = rect("zoom-path").await?;
        assert!(top.abs() <= 1.0 && bottom > 10.0, "scrolled on, the path stays at the top: {top}..{bottom}");
        shot_at(&c, "powers-of-ten-sticky-path", 1440, 900).await?;
        // "See the flip →" from the bottom of the model level: the flipped node is on the screen.
        c.goto(&format!("{base}powers-of-ten")).await.text_err()?;
        wait_node(&c, "model").await?;
        c.execute("document.getElementById('cmp-int4-flip').scrollIntoView({block: 'end'})", vec![])
            .await
            .text_err()?;
        c.find(Locator::Id("cmp-int4-flip")).await.text_err()?.click().await.text_err()?;
        wait_url(&c, "weights=int4").await?;
        until("the flipped bound", || async { c.find(Locator::Id("bound-flip")).await.ok() }).await?;
        let v = c
            .execute("const r = document.getElementById('bound-flip').getBoundingClientRect(); return r.top >= 0 && r.bottom <= innerHeight", vec![])
            .await
            .text_err()?;
        assert_eq!(v, json!(true), "the flip is on the screen");
        Ok(())
    });
}

/// Every link of every page, in the states that broke them (a pin, the picture sized by bytes,
/// every layer drawn, a TPOT bound no batch meets, tensor parallelism over two GPUs, an error),
/// answers 2xx. The links are read from the page as the browser has it (the script's changes
/// included) and asked for by the page itself (`fetch`, same origin).
#[test]
fn every_link_in_every_state_answers() {
    in_browser(&[], |c, base| async move {
        let mut states: Vec<String> = EVERY_PAGE.iter().map(|(slug, q)| format!("{slug}{q}")).collect();
        states.extend(
            [
                "powers-of-ten?pin=default",
                "powers-of-ten?at=layer.0.mlp.up&pin=batch%3D8&size=bytes",
                "powers-of-ten?at=layer.0&size=flops&expand=1",
                "powers-of-ten?expand=1&pin=default",
                "cost?tpot_ms=1",
                "cost?batch=16&tpot_ms=20",
                "models?tp=2",
                "?tp=2",
                "ledger?tp=2&batch=8",
                "batching?tp=2",
                "kv-cache?tp=2",
                "cost?tp=2",
                "moe?tp=2&model=mixtral-8x7b",
                "ledger?time_model=roofline&phase=prefill&flash=off",
                "serving?requests=100&disagg=1:1",
                "ledger?batch=0",
                "powers-of-ten?at=layer.99",
            ]
            .iter()
            .map(|s| s.to_string()),
        );
        let mut asked: std::collections::BTreeSet<String> = Default::default();
        let mut bad = Vec::new();
        for state in &states {
            c.goto(&format!("{base}{state}")).await.text_err()?;
            until("the page", || async { c.find(Locator::Css("main#content")).await.ok() }).await?;
            let links = c
                .execute("return [...document.querySelectorAll('a[href]')].map(a => a.getAttribute('href'))", vec![])
                .await
                .text_err()?;
            let fresh: Vec<String> = links
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|h| h.as_str())
                .filter(|h| h.starts_with('/'))
                .map(|h| h.split('#').next().unwrap_or(h).to_string())
                .filter(|h| !h.is_empty() && asked.insert(h.clone()))
                .collect();
            let statuses = c
                .execute_async(
                    "const [urls, done] = [arguments[0], arguments[arguments.length - 1]]; \
                     const out = []; let i = 0; \
                     async function next() { \
                       while (i < urls.length) { const u = urls[i++]; \
                         try { const r = await fetch(u, { headers: { Accept: 'text/html' } }); await r.arrayBuffer(); out.push([u, r.status]); } \
                         catch (e) { out.push([u, 0]); } } } \
                     Promise.all([next(), next(), next()]).then(() => done(out));",
                    vec![json!(fresh)],
                )
                .await
                .text_err()?;
            for s in statuses.as_array().into_iter().flatten() {
                let code = s[1].as_u64().unwrap_or(0);
                if !(200..300).contains(&code) {
                    bad.push(format!("/{state}: {} answers {code}", s[0].as_str().unwrap_or("?")));
                }
            }
        }
        // Pin by clicking, and size by bytes by clicking: the links of the state the clicks make.
        c.goto(&format!("{base}powers-of-ten?at=layer.0")).await.text_err()?;
        wait_node(&c, "layer.0").await?;
        c.find(Locator::Id("pin")).await.text_err()?.click().await.text_err()?;
        wait_url(&c, "pin=").await?;
        let downloads = c
            .execute("return [...document.querySelectorAll('.downloads a')].map(a => a.getAttribute('href'))", vec![])
            .await
            .text_err()?;
        for h in downloads.as_array().into_iter().flatten().filter_map(|h| h.as_str()) {
            let code = c
                .execute_async(
                    "fetch(arguments[0]).then(r => arguments[arguments.length - 1](r.status))",
                    vec![json!(h)],
                )
                .await
                .text_err()?;
            if code != json!(200) {
                bad.push(format!("after Pin: {h} answers {code}"));
            }
        }
        use std::io::Write;
        let _ = writeln!(std::io::stderr(), "crawl: {} links of {} page states asked for", asked.len(), states.len());
        assert!(asked.len() > 300, "{} links", asked.len());
        assert!(bad.is_empty(), "{} links do not answer 2xx:\n{}", bad.len(), bad.join("\n"));
        Ok(())
    });
}

/// axe-core (from the npm registry: `.ci/browser-deps` installs it under `target/axe`, or
/// `LLM_LEDGER_AXE` names `axe.min.js`), or why not.
fn axe_source() -> std::result::Result<String, String> {
    let path = std::env::var_os("LLM_LEDGER_AXE").map(PathBuf::from).unwrap_or_else(|| {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/axe/node_modules/axe-core/axe.min.js")
    });
    std::fs::read_to_string(&path).map_err(|e| {
        format!(
            "the accessibility check needs axe-core at {} ({e}): npm install --prefix target/axe axe-core@4, or set LLM_LEDGER_AXE",
            path.display()
        )
    })
}

/// axe-core's check of every page (its panel of controls and every fold open, so each control
/// is checked), in the light and the dark theme: no serious or critical violation. Every
/// violation found is printed, with its impact.
#[test]
fn no_page_has_a_serious_accessibility_violation() {
    let axe = match axe_source() {
        Ok(s) => s,
        Err(why) => {
            skip(&why);
            return;
        }
    };
    let run = |flags: &'static [&'static str], theme: &'static str| {
        let axe = axe.clone();
        in_browser(flags, move |c, base| async move {
            let mut serious = Vec::new();
            let mut seen = Vec::new();
            let mut pages: Vec<(String, String)> =
                EVERY_PAGE.iter().map(|(s, q)| (s.to_string(), q.to_string())).collect();
            pages.push(("ledger".into(), "?batch=0".into()));
            pages.push(("powers-of-ten".into(), "?at=layer.0".into()));
            for (slug, query) in &pages {
                c.goto(&format!("{base}{slug}{query}")).await.text_err()?;
                until("the page", || async { c.find(Locator::Css("main#content h1")).await.ok() }).await?;
                c.execute("document.querySelectorAll('details').forEach(d => d.open = true)", vec![])
                    .await
                    .text_err()?;
                c.execute(&format!("{axe}\n;return 1"), vec![]).await.text_err()?;
                let v = c
                    .execute_async(
                        "const done = arguments[arguments.length - 1]; \
                         axe.run(document, { resultTypes: ['violations'] }).then(r => done(r.violations.map(v => \
                           [v.id, v.impact, v.help, v.nodes.length, v.nodes.slice(0, 3).map(n => n.target.join(' ')).join(' | ')])), \
                           e => done([['axe-error', 'critical', String(e), 0, '']]));",
                        vec![],
                    )
                    .await
                    .text_err()?;
                for x in v.as_array().into_iter().flatten() {
                    let line = format!(
                        "{theme} /{slug}{query}: {} ({}) {} — {} node(s): {}",
                        x[0].as_str().unwrap_or(""),
                        x[1].as_str().unwrap_or(""),
                        x[2].as_str().unwrap_or(""),
                        x[3],
                        x[4].as_str().unwrap_or("")
                    );
                    if matches!(x[1].as_str(), Some("serious" | "critical")) {
                        serious.push(line.clone());
                    }
                    seen.push(line);
                }
            }
            use std::io::Write;
            let _ = writeln!(
                std::io::stderr(),
                "axe ({theme}): {} pages, {} violations ({} serious or critical)",
                pages.len(),
                seen.len(),
                serious.len()
            );
            for l in &seen {
                let _ = writeln!(std::io::stderr(), "axe: {l}");
            }
            assert!(serious.is_empty(), "serious accessibility violations:\n{}", serious.join("\n"));
            Ok(())
        })
    };
    run(&[], "light");
    run(&["--force-dark-mode", "--blink-settings=preferredColorScheme=0"], "dark");
}

/// The keyboard alone reaches a GEMM tile: Tab from the top of the page (past the skip link, the
/// navigation and the bar) to the tile grid, the arrow keys from tile to tile, each showing its
/// numbers; and a Serving chart's points the same way.
#[test]
fn the_keyboard_alone_reaches_a_gemm_tile_and_a_serving_point() {
    in_browser(&[], |c, base| async move {
        for (path, css) in
            [("gemm-tiling?m=1000&n=1000&k=1000", "svg.tile-grid"), ("serving?requests=100", "svg.serving")]
        {
            c.goto(&format!("{base}{path}")).await.text_err()?;
            until("the page", || async { c.find(Locator::Css("main#content h1")).await.ok() }).await?;
            // Back to a closed panel, as a first visit finds it: the fewest tab stops before the result.
            c.execute("document.getElementById('panel').open = false; document.activeElement && document.activeElement.blur()", vec![])
                .await
                .text_err()?;
            let mut presses = 0;
            let inside = format!("return !!(document.activeElement && document.activeElement.closest('{css}'))");
            while c.execute(&inside, vec![]).await.text_err()? != json!(true) {
                presses += 1;
                if presses > 120 {
                    return Err(format!("{path}: no mark of {css} within 120 tab stops"));
                }
                c.active_element().await.text_err()?.send_keys("\u{E004}").await.text_err()?;
            }
            let first = tip_text(&c).await.ok_or("no tooltip on the focused mark")?;
            c.active_element().await.text_err()?.send_keys("\u{E014}").await.text_err()?; // →
            let second =
                until("the next mark's tooltip", || async { tip_text(&c).await.filter(|t| *t != first) }).await?;
            use std::io::Write;
            let _ = writeln!(std::io::stderr(), "keyboard: {path}: {presses} tab stops to {css}; then {second:?}");
            shot(&c, &format!("keyboard-{}", path.split('?').next().unwrap_or(path))).await?;
        }
        Ok(())
    });
}

/// Save the Ledger's scenario three times with different states, open Compare from the
/// navigation: three columns with the ledger's numbers; a point of the Pareto front opens its
/// deployment; removing a column keeps the saved list in step.
#[test]
fn compare_three_saved_scenarios() {
    in_browser(&[], |c, base| async move {
        let states: [&[(&str, &str)]; 3] = [&[("batch", "1")], &[("batch", "8"), ("kv", "fp8")], &[("batch", "64")]];
        for (n, pairs) in states.iter().enumerate() {
            let q = serde_urlencoded::to_string(pairs).unwrap();
            c.goto(&format!("{base}ledger?{q}")).await.text_err()?;
            wait_heading(&c, "Ledger").await?;
            let save = until("the save button", || async {
                let b = c.find(Locator::Id("save-scenario")).await.ok()?;
                b.is_displayed().await.ok()?.then_some(b)
            })
            .await?;
            save.click().await.text_err()?;
            let want = format!("Compare the {} saved", n + 1);
            until(&want, || async {
                let t = c.find(Locator::Id("saved-note")).await.ok()?.text().await.ok()?;
                t.contains(&want).then_some(())
            })
            .await?;
        }
        c.find(Locator::Css("nav a[data-slug='compare']")).await.text_err()?.click().await.text_err()?;
        wait_heading(&c, "Compare").await?;
        let u = wait_url(&c, "s3=").await?;
        assert!(u.contains("s1=batch%3D1") && u.contains("s2=batch%3D8%26kv%3Dfp8"), "{u}");
        until("three columns", || async {
            let t = c.find(Locator::Id("compare")).await.ok()?;
            (t.attr("data-columns").await.ok()?? == "3").then_some(())
        })
        .await?;
        assert_eq!(rows(&c, "#compare thead th[data-col]").await, 3);
        for (col, pairs) in ["A", "B", "C"].iter().zip(states) {
            let v = c
                .find(Locator::Css(&format!("#m-step td[data-col='{col}']")))
                .await
                .text_err()?
                .attr("data-value")
                .await
                .text_err()?;
            assert_eq!(v.as_deref(), Some(cli_step_time(pairs).as_str()), "{col}");
        }
        shot(&c, "compare-three").await?;
        shot_at(&c, "phone-compare-three", 390, 844).await?;
        c.set_window_size(1280, 1800).await.text_err()?;
        // Remove B: two columns, and the saved list follows.
        c.find(Locator::Css("#compare a.remove[aria-label='Remove B from the comparison']"))
            .await
            .text_err()?
            .click()
            .await
            .text_err()?;
        until("two columns", || async {
            let t = c.find(Locator::Id("compare")).await.ok()?;
            (t.attr("data-columns").await.ok()?? == "2").then_some(())
        })
        .await?;
        let saved = c.execute("return localStorage.getItem('llm-ledger.saved')", vec![]).await.text_err()?;
        assert_eq!(saved, json!("[\"batch=1\",\"batch=64\"]"));
        // A point of the front opens its deployment in the ledger.
        let point = c.find(Locator::Css("#pareto svg.pareto a.mark-link")).await.text_err()?;
        let href = point.attr("href").await.text_err()?.unwrap_or_default();
        assert!(href.starts_with("/ledger?batch="), "{href}");
        c.goto(&format!("{}{}", base.trim_end_matches('/'), href)).await.text_err()?;
        wait_heading(&c, "Ledger").await?;
        Ok(())
    });
}

/// The network graph's search marks the operator as one types and opens its layers; the marked
/// box's link opens Powers of ten at that operator.
#[test]
fn the_graph_search_highlights_an_operator_that_opens_powers_of_ten() {
    in_browser(&[], |c, base| async move {
        c.goto(&format!("{base}graph?batch=8")).await.text_err()?;
        wait_heading(&c, "Network graph").await?;
        let closed = c.execute("return document.querySelector('#graph details').open", vec![]).await.text_err()?;
        assert_eq!(closed, json!(false), "the layers start folded");
        c.find(Locator::Id("graph-find")).await.text_err()?.send_keys("up_pr").await.text_err()?;
        let css = "#graph g.flow-op.match[data-path='layer.0.mlp.up']";
        until("the marked up-projection", || async { c.find(Locator::Css(css)).await.ok() }).await?;
        let open = c.execute("return document.querySelector('#graph details').open", vec![]).await.text_err()?;
        assert_eq!(open, json!(true), "its layers opened");
        let count = c.find(Locator::Id("graph-count")).await.text_err()?.attr("data-hits").await.text_err()?;
        assert_eq!(count.as_deref(), Some("1"));
        wait_url(&c, "find=up_pr").await?;
        shot(&c, "graph-search").await?;
        c.find(Locator::Css("#graph a[data-path='layer.0.mlp.up']")).await.text_err()?.click().await.text_err()?;
        wait_url(&c, "at=layer.0.mlp.up").await?;
        wait_heading(&c, "Powers of ten").await?;
        wait_node(&c, "layer.0.mlp.up").await?;
        let u = url(&c).await;
        assert!(u.contains("batch=8"), "the scenario travels: {u}");
        Ok(())
    });
}
