//! The CLI's `serve` and `--plot`: the real binary, end to end. The explorer's JSON is compared
//! with what `llm-ledger ledger --format json` prints for the same inputs.

use assert_cmd::Command;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Stdio};

fn cli(args: &[&str]) -> String {
    let out = Command::cargo_bin("llm-ledger").unwrap().args(args).assert().success().get_output().stdout.clone();
    String::from_utf8(out).unwrap()
}

/// `llm-ledger serve --port 0`, stopped when dropped.
struct Server {
    child: Child,
    addr: String,
}

impl Server {
    fn start(extra: &[&str]) -> Server {
        let exe = assert_cmd::cargo::cargo_bin("llm-ledger");
        let mut child = std::process::Command::new(exe)
            .args(["serve", "--port", "0"])
            .args(extra)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stderr.take().unwrap()).read_line(&mut line).unwrap();
        // "llm-ledger explorer: http://127.0.0.1:PORT/  (Ctrl-C to stop)"
        let addr = line
            .split("http://")
            .nth(1)
            .and_then(|s| s.split('/').next())
            .unwrap_or_else(|| panic!("{line}"))
            .to_string();
        Server { child, addr }
    }

    /// GET `path`: (status, body).
    fn get(&self, path: &str) -> (u16, String) {
        let mut s = TcpStream::connect(&self.addr).unwrap();
        write!(s, "GET {path} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n", self.addr).unwrap();
        let mut raw = String::new();
        s.read_to_string(&mut raw).unwrap();
        let (head, body) = raw.split_once("\r\n\r\n").unwrap();
        (head[9..12].parse().unwrap(), body.to_string())
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn serve_answers_with_the_same_json_as_the_ledger_command() {
    let server = Server::start(&[]);
    assert!(server.addr.starts_with("127.0.0.1:"), "binds loopback by default: {}", server.addr);
    for (query, flags) in [
        ("", vec![]),
        ("?batch=64&ctx=8192&kv=fp8", vec!["--batch", "64", "--ctx", "8192", "--kv", "fp8"]),
        (
            "?model=qwen3-30b-a3b&gpu=mi300x&phase=prefill&ctx=1024",
            vec!["-m", "qwen3-30b-a3b", "-g", "mi300x", "-p", "prefill", "-c", "1024"],
        ),
    ] {
        let (status, body) = server.get(&format!("/api/ledger{query}"));
        assert_eq!(status, 200);
        let mut args = vec!["ledger", "--format", "json"];
        args.extend(flags);
        assert_eq!(body, cli(&args), "{query}");
    }
    let (status, page) = server.get("/");
    assert_eq!(status, 200);
    assert!(page.contains("llama-3-8b on h100-sxm · decode · batch 1 × 2,048 cached tokens"));
    // The CLI's refusal and the explorer's are the same line.
    let (status, body) = server.get("/api/ledger?batch=0");
    assert_eq!(status, 400);
    let err = Command::cargo_bin("llm-ledger")
        .unwrap()
        .args(["ledger", "--batch", "0"])
        .assert()
        .code(2)
        .get_output()
        .stderr
        .clone();
    let msg = String::from_utf8(err).unwrap();
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    // The explorer names the query parameter, the CLI the flag as typed.
    let web = v["error"]["message"].as_str().unwrap().replace("`batch`", "`--batch`");
    assert_eq!(format!("error: {web}\n"), msg);
}

#[test]
fn serve_adds_the_users_gpu_file_to_the_catalogue() {
    let dir = std::env::temp_dir().join(format!("llm-ledger-serve-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("gpus.toml");
    std::fs::write(
        &file,
        r#"[[gpu]]
name = "my-card"
sm_count = 100
memory_bytes = 48e9
memory_bandwidth_bytes_per_s = 1e12
l2_bytes = 40e6
onchip = "sm90"
[gpu.peak_flops_per_s]
vector = 50e12
bf16 = 400e12
fp16 = 400e12
"#,
    )
    .unwrap();
    let server = Server::start(&["--gpu-file", file.to_str().unwrap()]);
    let (status, body) = server.get("/api/ledger?gpu=my-card");
    assert_eq!(status, 200, "{body}");
    assert_eq!(body, cli(&["ledger", "--gpu-file", file.to_str().unwrap(), "--gpu", "my-card", "--format", "json"]));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn serve_refuses_a_bad_address_with_exit_code_2() {
    Command::cargo_bin("llm-ledger").unwrap().args(["serve", "--bind", "not-an-ip"]).assert().code(2);
}

#[test]
fn ledger_plot_writes_a_standalone_roofline_svg() {
    let path = std::env::temp_dir().join(format!("llm-ledger-plot-{}.svg", std::process::id()));
    let table = cli(&["ledger", "--batch", "8", "--plot", path.to_str().unwrap()]);
    assert!(table.contains("step "), "the table is still printed");
    let svg = std::fs::read_to_string(&path).unwrap();
    std::fs::remove_file(&path).unwrap();
    assert!(svg.starts_with("<?xml"));
    assert!(svg.contains("<svg class=\"plot roofline\"") && svg.contains("prefers-color-scheme: dark"));
    assert!(svg.contains("llama-3-8b on h100-sxm · decode · batch 8 × 2,048 tokens"), "titled with the scenario");
    assert!(svg.contains("<title>gate_proj × 32"), "points carry their numbers");
    let err =
        Command::cargo_bin("llm-ledger").unwrap().args(["ledger", "--plot", "/nonexistent-dir/x.svg"]).assert().code(2);
    let msg = String::from_utf8(err.get_output().stderr.clone()).unwrap();
    assert!(msg.starts_with("error: cannot write plot `/nonexistent-dir/x.svg`"), "{msg}");
}

/// `zoom --at layer.N --plot FILE.svg` writes the layer as a dataflow diagram
/// (the explorer's drawing, without the links), and the zoom table still goes to stdout.
#[test]
fn zoom_plot_writes_the_layers_dataflow() {
    let path = std::env::temp_dir().join(format!("llm-ledger-dataflow-{}.svg", std::process::id()));
    let p = path.to_str().unwrap();
    let table = cli(&["zoom", "--at", "layer.3", "--flash", "off", "--phase", "prefill", "--ctx", "512", "--plot", p]);
    assert!(table.contains("layer.3"), "the zoom report is still printed");
    let svg = std::fs::read_to_string(&path).unwrap();
    std::fs::remove_file(&path).unwrap();
    assert!(svg.starts_with("<?xml") && svg.contains("<svg class=\"plot dataflow\""));
    assert!(svg.contains("prefers-color-scheme: dark"), "a file has its own colours");
    assert!(svg.contains("data-path=\"layer.3.attn.scores\"") && svg.contains("score matrix "));
    assert!(!svg.contains("<a href"), "no links in a file");
    let block = cli(&["zoom", "--at", "layer.0.mlp", "--plot", p]);
    assert!(!block.is_empty());
    let svg = std::fs::read_to_string(&path).unwrap();
    std::fs::remove_file(&path).unwrap();
    assert!(svg.contains("data-path=\"layer.0.mlp.down\"") && !svg.contains("layer.0.attn."));
}

/// `zoom --at` a path this scenario does not have shows the deepest level of it that it has,
/// as the explorer does, with a note on stderr saying why; exit 0.
#[test]
fn zoom_at_a_path_this_scenario_lacks_shows_its_deepest_level_with_a_note() {
    let out = Command::cargo_bin("llm-ledger").unwrap().args(["zoom", "--at", "layer.0.attn.scores"]).output().unwrap();
    assert!(out.status.success());
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert_eq!(
        stderr.trim_end(),
        "note: `layer.0.attn.scores` is not part of this scenario: FlashAttention is on, so the score and value products \
         and the softmax are fused into one operator, `attention`. Showing `layer.0.attn`, the deepest level of that path \
         that is (here it holds norm, q, k, v, rope, kv_write, … 10 in all)."
    );
    assert!(stdout.contains("zoom: model › layer.0\n"), "{stdout}");
    // JSON (read by programs, as the explorer's /api/zoom) names the path's error instead.
    let out = Command::cargo_bin("llm-ledger")
        .unwrap()
        .args(["zoom", "--at", "layer.0.attn.scores", "--format", "json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).starts_with("error: unknown zoom path `layer.0.attn.scores`"));
    // A path the scenario has: no note.
    let out = Command::cargo_bin("llm-ledger").unwrap().args(["zoom", "--at", "layer.0.attn"]).output().unwrap();
    assert!(out.status.success() && out.stderr.is_empty());
}

/// Every page's JSON endpoint answers what the matching command prints for the same flags, byte
/// for byte (the query keys are the flags' names with `_`).
#[test]
fn serve_answers_every_command_as_the_cli_does() {
    let server = Server::start(&[]);
    let cases: &[(&str, &[&str])] = &[
        ("/api/zoom?at=layer.0.mlp.up.tiles", &["zoom", "--at", "layer.0.mlp.up.tiles"]),
        ("/api/zoom?phase=prefill&ctx=512&at=model", &["zoom", "--phase", "prefill", "--ctx", "512"]),
        (
            "/api/sweep?batch=1..256*2&ctx=2048&reserve=4GB",
            &["sweep", "--batch", "1..256*2", "--ctx", "2048", "--reserve", "4GB"],
        ),
        (
            "/api/sweep?model=mixtral-8x7b&batch=1,8&ctx=1024,4096",
            &["sweep", "-m", "mixtral-8x7b", "--batch", "1,8", "--ctx", "1024,4096"],
        ),
        ("/api/kv?batch=64&kv=fp8", &["kv", "--batch", "64", "--kv", "fp8"]),
        (
            "/api/cost?batch=16&usd_per_hour=3&tpot_ms=20",
            &["cost", "--batch", "16", "--usd-per-hour", "3", "--tpot-ms", "20"],
        ),
        (
            "/api/latency?batch=8&prompt=1000&output=100",
            &["latency", "--batch", "8", "--prompt", "1000", "--output", "100"],
        ),
        (
            "/api/tile?m=1000&n=1000&k=1000&tile=128x128x64",
            &["tile", "--m", "1000", "--n", "1000", "--k", "1000", "--tile", "128x128x64"],
        ),
        (
            "/api/tile?m=64&n=4096&k=4096&gpu=b200&weights=fp8&activations=fp8",
            &["tile", "--m", "64", "--n", "4096", "--k", "4096", "--gpu", "b200", "-w", "fp8", "--activations", "fp8"],
        ),
        ("/api/moe?model=mixtral-8x7b&zipf=1", &["moe", "-m", "mixtral-8x7b", "--zipf", "1"]),
        (
            "/api/moe?experts=64&top_k=4&batch=1..64*4",
            &["moe", "--experts", "64", "--top-k", "4", "--batch", "1..64*4"],
        ),
    ];
    for (path, args) in cases {
        let (status, body) = server.get(path);
        assert_eq!(status, 200, "{path}: {body}");
        let mut a = args.to_vec();
        a.extend(["--format", "json"]);
        assert_eq!(body, cli(&a), "{path}");
        let (_, csv) = server.get(&format!("{path}&format=csv"));
        a.truncate(a.len() - 1);
        a.push("csv");
        assert_eq!(csv, cli(&a), "{path} as CSV");
    }
    // The refusals are the CLI's lines, with the query parameters named as the flags.
    for (path, args) in
        [("/api/moe", vec!["moe"]), ("/api/tile?m=0&n=8&k=8", vec!["tile", "--m", "0", "--n", "8", "--k", "8"])]
    {
        let (status, body) = server.get(path);
        assert_eq!(status, 400, "{path}");
        let v: serde_json::Value = serde_json::from_str(&body).unwrap();
        let err = Command::cargo_bin("llm-ledger").unwrap().args(&args).assert().code(2).get_output().stderr.clone();
        // The explorer spells the inputs a message names as its query keys, the CLI as flags.
        let web = v["error"]["message"].as_str().unwrap().replace("`m`", "`--m`");
        let web = web.replace("or experts and top_k", "or --experts and --top-k");
        assert_eq!(format!("error: {web}\n"), String::from_utf8(err).unwrap(), "{path}");
    }
    // Inputs a page refuses are flags the command does not have (its help does not list them).
    for (path, args) in [
        ("/api/cost?ctx=512", vec!["cost", "--ctx", "512"]),
        ("/api/sweep?contexts=2048x8", vec!["sweep", "--contexts", "2048x8"]),
    ] {
        assert_eq!(server.get(path).0, 400, "{path}");
        let err = Command::cargo_bin("llm-ledger").unwrap().args(&args).assert().code(2).get_output().stderr.clone();
        assert!(String::from_utf8(err).unwrap().contains(&format!("unexpected argument '{}' found", args[1])));
    }
    // The plot of `sweep --plot` is the page's.
    let (status, svg) = server.get("/plot/batch-curve.svg?batch=1..512*2&ctx=2048");
    assert_eq!(status, 200);
    let path = std::env::temp_dir().join(format!("llm-ledger-sweep-plot-{}.svg", std::process::id()));
    cli(&["sweep", "--batch", "1..512*2", "--ctx", "2048", "--plot", path.to_str().unwrap()]);
    let file = std::fs::read_to_string(&path).unwrap();
    std::fs::remove_file(&path).unwrap();
    assert_eq!(file, svg);
}

#[test]
fn sweep_plot_writes_the_batch_curve_and_refuses_what_it_cannot_draw() {
    let path = std::env::temp_dir().join(format!("llm-ledger-sweep-{}.svg", std::process::id()));
    let p = path.to_str().unwrap();
    let table = cli(&["sweep", "--counting", "seed", "--batch", "1..512*2", "--plot", p]);
    assert!(table.contains("fits"), "the table is still printed");
    let svg = std::fs::read_to_string(&path).unwrap();
    std::fs::remove_file(&path).unwrap();
    assert!(svg.starts_with("<?xml") && svg.contains("<svg class=\"plot batch-curve\""));
    // Seed counting: (80e9 − 2e9 − 15.0 GB) ÷ 268,435,456 B per sequence = 234.6; 15.0 GB ÷ (2,048 × 131,072 B) = 55.9.
    assert!(svg.contains("memory wall: batch 235"), "{svg}");
    assert!(svg.contains("KV bytes = weight bytes: batch 55.9"));
    assert!(svg.contains("llama-3-8b on h100-sxm · decode · 2,048 tokens per sequence"));
    let fails = |args: &[&str]| {
        let out = Command::cargo_bin("llm-ledger").unwrap().args(args).assert().code(2).get_output().stderr.clone();
        String::from_utf8(out).unwrap()
    };
    let e = fails(&["sweep", "--ctx", "1024,2048", "--plot", p]);
    assert!(
        e.starts_with("error: invalid `--ctx`: \"1024,2048\" (2 values) (one context length for a batch curve)"),
        "{e}"
    );
    let e = fails(&["sweep", "--batch", "1..5000", "--plot", p]);
    assert!(e.starts_with("error: invalid `--plot`: 5000 batch sizes (at most 4096 for a plot)"), "{e}");
    assert!(!path.exists(), "nothing is written when the plot is refused");
}
