//! `--model org/name` from the Hugging Face cache (a cache tree made here) and from a
//! Hub endpoint (a loopback HTTP server started here, reached through `HF_ENDPOINT`). Nothing
//! here reaches the network.

use assert_cmd::Command;
use serde_json::Value;
use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};

/// The Llama 3.1 8B config.json as published (the fields the ledger reads).
pub const LLAMA_8B: &str = r#"{"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096,
  "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8, "intermediate_size": 14336,
  "vocab_size": 128256, "max_position_embeddings": 131072, "tie_word_embeddings": false, "hidden_act": "silu",
  "rope_theta": 500000.0, "torch_dtype": "bfloat16"}"#;

const COMMIT_A: &str = "0123456789abcdef0123456789abcdef01234567";
const COMMIT_B: &str = "89abcdef0123456789abcdef0123456789abcdef";
/// A file hash in the form the Hub's `ETag` takes (a git blob SHA-1).
const ETAG: &str = "fedcba9876543210fedcba9876543210fedcba98";

/// A fresh scratch folder named `name`.
pub fn scratch(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("hub-tests").join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Put `config` in `cache` as snapshot `commit` of `repo` (org/name), pointed at by `refs/<branch>`
/// when a branch is given.
pub fn put_snapshot(cache: &Path, repo: &str, commit: &str, branch: Option<&str>, files: &[(&str, &[u8])]) -> PathBuf {
    let repo_dir = cache.join(format!("models--{}", repo.replace('/', "--")));
    let snap = repo_dir.join("snapshots").join(commit);
    std::fs::create_dir_all(&snap).unwrap();
    for (name, bytes) in files {
        std::fs::write(snap.join(name), bytes).unwrap();
    }
    if let Some(b) = branch {
        std::fs::create_dir_all(repo_dir.join("refs")).unwrap();
        std::fs::write(repo_dir.join("refs").join(b), commit).unwrap();
    }
    snap
}

/// The CLI with only this cache visible, offline unless `endpoint` is given, no token.
fn cli_with(cache: &Path, endpoint: Option<&str>) -> Command {
    let mut c = Command::cargo_bin("llm-ledger").unwrap();
    c.env("HF_HUB_CACHE", cache).env("HF_HOME", cache.join("home")).env_remove("HF_TOKEN");
    match endpoint {
        Some(e) => c.env_remove("HF_HUB_OFFLINE").env("HF_ENDPOINT", e),
        None => c.env("HF_HUB_OFFLINE", "1").env("HF_ENDPOINT", "http://127.0.0.1:9"),
    };
    c.timeout(std::time::Duration::from_secs(60));
    c
}

fn run_ok(mut c: Command, args: &[&str]) -> String {
    let out = c.args(args).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

/// Exit 2 with one error line; returns it.
fn run_fails(mut c: Command, args: &[&str]) -> String {
    let out = c.args(args).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
    assert!(out.stdout.is_empty());
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with("error: ") && !err.contains("panicked"), "{err}");
    err.trim_end().to_string()
}

/// The ledger's JSON without the model's name (a Hub id and a path name the same model).
fn numbers(json: &str) -> Value {
    let mut v: Value = serde_json::from_str(json).unwrap();
    strip_names(&mut v);
    v
}

fn strip_names(v: &mut Value) {
    match v {
        Value::Object(o) => {
            o.remove("model");
            o.remove("title");
            o.values_mut().for_each(strip_names);
        }
        Value::Array(a) => a.iter_mut().for_each(strip_names),
        _ => {}
    }
}

/// `ledger --model meta-llama/Llama-3.1-8B` from a populated cache with no
/// network gives the numbers of the same config.json by path.
#[test]
fn hub_id_from_the_cache_matches_the_config_by_path() {
    let cache = scratch("populated");
    let snap = put_snapshot(
        &cache,
        "meta-llama/Llama-3.1-8B",
        COMMIT_A,
        Some("main"),
        &[("config.json", LLAMA_8B.as_bytes())],
    );
    let args = ["ledger", "--batch", "8", "--ctx", "2048", "--format", "json"];
    let by_id = run_ok(cli_with(&cache, None), &[&args[..], &["--model", "meta-llama/Llama-3.1-8B"]].concat());
    let path = snap.join("config.json");
    let by_path = run_ok(cli_with(&cache, None), &[&args[..], &["--model", path.to_str().unwrap()]].concat());
    assert!(by_id.len() > 1000, "{by_id}");
    assert_eq!(numbers(&by_id), numbers(&by_path));
    // And the preset of the same shapes agrees on the weights.
    let table = run_ok(cli_with(&cache, None), &["ledger", "--model", "meta-llama/Llama-3.1-8B"]);
    assert!(table.contains("meta-llama/Llama-3.1-8B"), "{table}");
}

/// `refs/main` by default; `--revision` picks another branch or a commit hash.
#[test]
fn revision_picks_the_snapshot() {
    let cache = scratch("revisions");
    let two_layers = LLAMA_8B.replace("\"num_hidden_layers\": 32", "\"num_hidden_layers\": 2");
    put_snapshot(&cache, "org/model", COMMIT_A, Some("main"), &[("config.json", LLAMA_8B.as_bytes())]);
    put_snapshot(&cache, "org/model", COMMIT_B, Some("small"), &[("config.json", two_layers.as_bytes())]);
    let params = |extra: &[&str]| -> f64 {
        let out =
            run_ok(cli_with(&cache, None), &[&["kv", "--model", "org/model", "--format", "json"][..], extra].concat());
        let v: Value = serde_json::from_str(&out).unwrap();
        find_number(&v, "weight_bytes").unwrap_or_else(|| panic!("no weight_bytes in {out}"))
    };
    let main = params(&[]);
    let small = params(&["--revision", "small"]);
    let by_commit = params(&["--revision", COMMIT_B]);
    let main_by_commit = params(&["--revision", COMMIT_A]);
    assert!(small < main / 2.0, "{small} vs {main}");
    assert_eq!(small, by_commit);
    assert_eq!(main, main_by_commit);
    let e = run_fails(cli_with(&cache, None), &["kv", "--model", "org/model", "--revision", "nope"]);
    assert!(e.contains("HF_HUB_OFFLINE") && e.contains("revision nope"), "{e}");
    let e = run_fails(cli_with(&cache, None), &["kv", "--model", "llama-3.1-8b", "--revision", "main"]);
    assert!(e.starts_with("error: invalid `--revision`"), "{e}");
}

/// The first number under `key` anywhere in `v`.
fn find_number(v: &Value, key: &str) -> Option<f64> {
    match v {
        Value::Object(o) => o.get(key).and_then(Value::as_f64).or_else(|| o.values().find_map(|x| find_number(x, key))),
        Value::Array(a) => a.iter().find_map(|x| find_number(x, key)),
        _ => None,
    }
}

/// Offline with an empty cache, or a cache whose ref points at a missing snapshot: one clear line.
#[test]
fn offline_without_the_snapshot_is_a_clear_error() {
    let cache = scratch("empty");
    let e = run_fails(cli_with(&cache, None), &["ledger", "--model", "meta-llama/Llama-3.1-8B"]);
    assert!(
        e.contains("`meta-llama/Llama-3.1-8B` is not in the Hugging Face cache") && e.contains("HF_HUB_OFFLINE"),
        "{e}"
    );
    let repo_dir = cache.join("models--org--gone");
    std::fs::create_dir_all(repo_dir.join("refs")).unwrap();
    std::fs::write(repo_dir.join("refs/main"), COMMIT_A).unwrap();
    let e = run_fails(cli_with(&cache, None), &["ledger", "--model", "org/gone"]);
    assert!(e.contains("models--org--gone` has no snapshot with config.json for revision main"), "{e}");
}

/// A local path always wins over a repo id, and a preset name stays a preset.
#[test]
fn a_local_path_wins_over_a_repo_id() {
    let cache = scratch("path-wins");
    let dir = cache.join("org").join("model");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("config.json"), LLAMA_8B).unwrap();
    let mut c = cli_with(&cache, None);
    c.current_dir(&cache);
    let out = run_ok(c, &["ledger", "--model", "org/model"]);
    assert!(out.contains("org/model"), "{out}");
    let out = run_ok(cli_with(&cache, None), &["kv", "--model", "llama-3.1-8b"]);
    assert!(!out.is_empty());
}

/// A model name that is a file in the current folder is that file (`tiny-q4_k_m.gguf` in
/// examples/, once "unknown model"); a preset's name that is also a file here is the file, and a
/// note says so.
#[test]
fn a_model_name_that_is_a_file_here_is_that_file() {
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    let cache = scratch("name-is-file");
    let mut c = cli_with(&cache, None);
    c.current_dir(&examples);
    let out = run_ok(c, &["ledger", "--model", "tiny-q4_k_m.gguf"]);
    assert!(out.starts_with("tiny-q4_k_m.gguf on h100-sxm"), "{out}");
    assert!(out.contains("note: weights from checkpoint headers: 788552 bytes"), "{out}");
    let two_layers = LLAMA_8B.replace("\"num_hidden_layers\": 32", "\"num_hidden_layers\": 2");
    std::fs::create_dir_all(cache.join("llama-3-8b")).unwrap();
    std::fs::write(cache.join("llama-3-8b/config.json"), &two_layers).unwrap();
    let mut c = cli_with(&cache, None);
    c.current_dir(&cache);
    let table = run_ok(c, &["ledger", "--model", "llama-3-8b"]);
    let note = "note: `llama-3-8b` names both the preset llama-3-8b and a file here: the model is the file's";
    assert!(table.contains(note), "{table}");
    let mut c = cli_with(&cache, None);
    c.current_dir(&cache);
    let out = run_ok(c, &["kv", "--model", "llama-3-8b", "--format", "json"]);
    let preset = run_ok(cli_with(&cache, None), &["kv", "--model", "llama-3-8b", "--format", "json"]);
    let weights = |s: &str| find_number(&serde_json::from_str(s).unwrap(), "weight_bytes").unwrap();
    assert!(weights(&out) < weights(&preset) / 2.0, "the two-layer file, not the preset");
}

/// What the loopback Hub answers.
#[derive(Clone, Copy)]
enum Hub {
    /// config.json served (the index answers 404).
    Serves,
    /// 401 unless the request carries `Authorization: Bearer hf_secret` (a gated repo).
    Gated,
    /// Every request 404.
    Missing,
    /// The body stops halfway through its Content-Length.
    Truncated,
    /// Reads the request and never answers.
    Silent,
}

/// Start a one-thread HTTP/1.1 server on loopback that answers as `hub` does; returns its URL.
fn start_hub(hub: Hub) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut s) = stream else { continue };
            let mut req = Vec::new();
            let mut buf = [0u8; 1024];
            while !req.windows(4).any(|w| w == b"\r\n\r\n") {
                match s.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => req.extend_from_slice(&buf[..n]),
                }
            }
            let req = String::from_utf8_lossy(&req).to_string();
            let path = req.split_whitespace().nth(1).unwrap_or("").to_string();
            let lower = req.to_ascii_lowercase();
            let probe = lower.contains("range: bytes=0-0");
            let authorised = lower.contains("authorization: bearer hf_secret");
            let body = LLAMA_8B.as_bytes();
            let head = |status: &str, extra: &str, len: usize| {
                format!("HTTP/1.1 {status}\r\nContent-Length: {len}\r\nConnection: close\r\n{extra}\r\n")
            };
            let meta =
                format!("x-repo-commit: {COMMIT_A}\r\netag: \"{ETAG}\"\r\ncontent-range: bytes 0-0/{}\r\n", body.len());
            if matches!(hub, Hub::Silent) {
                std::thread::sleep(std::time::Duration::from_secs(600));
            }
            let response: Vec<u8> = match hub {
                Hub::Gated if !authorised => head("401 Unauthorized", "", 0).into_bytes(),
                Hub::Missing | Hub::Silent => head("404 Not Found", "", 0).into_bytes(),
                _ if !path.ends_with("/config.json") => head("404 Not Found", "", 0).into_bytes(),
                _ if probe => [head("206 Partial Content", &meta, 1).as_bytes(), &body[..1]].concat(),
                Hub::Serves | Hub::Gated => [head("200 OK", &meta, body.len()).as_bytes(), body].concat(),
                Hub::Truncated => [head("200 OK", &meta, body.len()).as_bytes(), &body[..body.len() / 2]].concat(),
            };
            let _ = s.write_all(&response);
            let _ = s.flush();
        }
    });
    url
}

#[test]
fn download_from_the_hub_endpoint() {
    let cache = scratch("download");
    let url = start_hub(Hub::Serves);
    let by_id =
        run_ok(cli_with(&cache, Some(&url)), &["ledger", "--model", "meta-llama/Llama-3.1-8B", "--format", "json"]);
    // Now in the cache: offline gives the same answer.
    assert!(cache.join("models--meta-llama--Llama-3.1-8B/refs/main").is_file());
    let offline = run_ok(cli_with(&cache, None), &["ledger", "--model", "meta-llama/Llama-3.1-8B", "--format", "json"]);
    assert_eq!(numbers(&by_id), numbers(&offline));
    let path = scratch("download-by-path").join("config.json");
    std::fs::write(&path, LLAMA_8B).unwrap();
    let by_path = run_ok(cli_with(&cache, None), &["ledger", "--model", path.to_str().unwrap(), "--format", "json"]);
    assert_eq!(numbers(&by_id), numbers(&by_path));
}

#[test]
fn download_errors_are_one_line() {
    for (hub, expected) in [
        (Hub::Gated, "the Hub refused access (HTTP 401); the repo is gated or private: accept its licence on the model page and set HF_TOKEN"),
        (Hub::Missing, "not found at revision main"),
        (Hub::Truncated, "cannot download `config.json` of `--model` org/model from http://127.0.0.1"),
    ] {
        let cache = scratch("download-errors");
        let url = start_hub(hub);
        let e = run_fails(cli_with(&cache, Some(&url)), &["ledger", "--model", "org/model"]);
        assert!(e.contains(expected), "{e}");
        assert!(!cache.join("models--org--model/refs/main").exists(), "nothing half-written is used");
    }
}

/// A Hub that never answers: an error after HF_HUB_DOWNLOAD_TIMEOUT, not a hang.
#[test]
fn a_silent_hub_times_out() {
    let cache = scratch("silent");
    let url = start_hub(Hub::Silent);
    let mut c = cli_with(&cache, Some(&url));
    c.env("HF_HUB_DOWNLOAD_TIMEOUT", "1");
    let e = run_fails(c, &["ledger", "--model", "org/model"]);
    assert!(e.contains("no answer within 1 s (HF_HUB_DOWNLOAD_TIMEOUT"), "{e}");
    let mut c = cli_with(&cache, Some(&url));
    c.env("HF_HUB_DOWNLOAD_TIMEOUT", "soon");
    let e = run_fails(c, &["ledger", "--model", "org/model"]);
    assert!(e.starts_with("error: invalid `HF_HUB_DOWNLOAD_TIMEOUT`: \"soon\""), "{e}");
}

/// A gated repo: refused without a token, served with `HF_TOKEN` or with the token file
/// `huggingface-cli login` writes (`$HF_HOME/token`).
#[test]
fn gated_repos_take_the_token() {
    let url = start_hub(Hub::Gated);
    let cache = scratch("gated-env");
    let mut c = cli_with(&cache, Some(&url));
    c.env("HF_TOKEN", "hf_secret");
    run_ok(c, &["kv", "--model", "org/gated"]);
    let cache = scratch("gated-file");
    std::fs::create_dir_all(cache.join("home")).unwrap();
    std::fs::write(cache.join("home/token"), "hf_secret\n").unwrap();
    run_ok(cli_with(&cache, Some(&url)), &["kv", "--model", "org/gated"]);
    let cache = scratch("gated-none");
    let e = run_fails(cli_with(&cache, Some(&url)), &["kv", "--model", "org/gated"]);
    assert!(e.contains("HTTP 401") && e.contains("set HF_TOKEN"), "{e}");
}

/// The body of a scripted Hub answer.
enum Body {
    Bytes(Vec<u8>),
    /// This many zero bytes, written in 64 KiB pieces as the client reads them (never held whole).
    Zeros(u64),
    /// These bytes, one every 100 ms.
    Trickle(Vec<u8>),
}

/// One answer of a scripted Hub: a status line, header lines, a body and whether to send its
/// `Content-Length` (without, the body ends when the connection closes).
struct Answer {
    status: &'static str,
    headers: Vec<String>,
    body: Body,
    length: bool,
}

impl Answer {
    fn new(status: &'static str, headers: &[&str], body: &[u8]) -> Answer {
        Answer {
            status,
            headers: headers.iter().map(|h| h.to_string()).collect(),
            body: Body::Bytes(body.to_vec()),
            length: true,
        }
    }

    /// config.json served with these commit and hash headers.
    fn config(commit: &str, etag: &str) -> Answer {
        let (c, e) = (format!("X-Repo-Commit: {commit}"), format!("ETag: {etag}"));
        Answer::new("200 OK", &[&c, &e], LLAMA_8B.as_bytes())
    }

    fn not_found() -> Answer {
        Answer::new("404 Not Found", &[], b"")
    }
}

/// What a scripted Hub saw: each request's first line and headers, and the body bytes it sent.
#[derive(Default)]
struct Seen {
    requests: Vec<String>,
    body_bytes_sent: u64,
}

/// Start a Hub on `ip` (a loopback address) answering each request with `answer(path, request)`,
/// one thread per connection; returns its URL and what it saw.
fn scripted_hub(
    ip: &str,
    answer: impl Fn(&str, &str) -> Answer + Send + Sync + 'static,
) -> (String, std::sync::Arc<std::sync::Mutex<Seen>>) {
    use std::sync::{Arc, Mutex};
    let listener = TcpListener::bind((ip, 0)).unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let seen = Arc::new(Mutex::new(Seen::default()));
    let (answer, log) = (Arc::new(answer), seen.clone());
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut s) = stream else { continue };
            let (answer, log) = (answer.clone(), log.clone());
            std::thread::spawn(move || {
                let mut req = Vec::new();
                let mut buf = [0u8; 1024];
                while !req.windows(4).any(|w| w == b"\r\n\r\n") {
                    match s.read(&mut buf) {
                        Ok(0) | Err(_) => return,
                        Ok(n) => req.extend_from_slice(&buf[..n]),
                    }
                }
                let req = String::from_utf8_lossy(&req).to_string();
                let path = req.split_whitespace().nth(1).unwrap_or("").to_string();
                log.lock().unwrap().requests.push(req.clone());
                let a = answer(&path, &req);
                let len = match &a.body {
                    Body::Bytes(b) => b.len() as u64,
                    Body::Zeros(n) => *n,
                    Body::Trickle(b) => b.len() as u64,
                };
                let mut head = format!("HTTP/1.1 {}\r\nConnection: close\r\n", a.status);
                if a.length {
                    head.push_str(&format!("Content-Length: {len}\r\n"));
                }
                for h in &a.headers {
                    head.push_str(&format!("{h}\r\n"));
                }
                head.push_str("\r\n");
                if s.write_all(head.as_bytes()).is_err() {
                    return;
                }
                match a.body {
                    Body::Bytes(b) => {
                        let _ = s.write_all(&b);
                    }
                    Body::Zeros(n) => {
                        let chunk = vec![0u8; 64 << 10];
                        let mut left = n;
                        while left > 0 {
                            let k = left.min(chunk.len() as u64);
                            if s.write_all(&chunk[..k as usize]).is_err() {
                                break;
                            }
                            left -= k;
                            log.lock().unwrap().body_bytes_sent += k;
                        }
                    }
                    Body::Trickle(b) => {
                        for byte in b {
                            if s.write_all(&[byte]).and_then(|()| s.flush()).is_err() {
                                break;
                            }
                            std::thread::sleep(std::time::Duration::from_millis(100));
                        }
                    }
                }
                let _ = s.flush();
            });
        }
    });
    (url, seen)
}

/// Every file (not folder) under `dir`.
fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() && !p.is_symlink() {
                out.extend(files_under(&p));
            } else {
                out.push(p);
            }
        }
    }
    out
}

/// Server-supplied names that would leave the cache folder (absolute and `../` hashes, commit
/// headers of `../..` and of an absolute path) are refused with one line naming the header, and
/// nothing is written: not the path they name, not the cache.
#[test]
fn hostile_commit_and_etag_headers_write_nothing() {
    let root = scratch("hostile-names");
    let outside = root.join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    let abs = outside.join("x").display().to_string();
    let cases: Vec<(String, String, &str)> = vec![
        (COMMIT_A.into(), format!("\"{abs}\""), "`ETag: \"/"),
        (COMMIT_A.into(), "\"../../../outside/x\"".into(), "`ETag: \"../../../outside/x\"`"),
        (COMMIT_A.into(), "W/\"../x\"".into(), "`ETag: W/\"../x\"`"),
        ("../..".into(), format!("\"{ETAG}\""), "`X-Repo-Commit: ../..`"),
        ("../../../outside".into(), format!("\"{ETAG}\""), "`X-Repo-Commit: ../../../outside`"),
        (abs.clone(), format!("\"{ETAG}\""), "`X-Repo-Commit: /"),
    ];
    for (commit, etag, named) in cases {
        let cache = root.join("cache");
        let _ = std::fs::remove_dir_all(&cache);
        std::fs::create_dir_all(&cache).unwrap();
        let (url, _) = scripted_hub("127.0.0.1", move |path, _| {
            if path.ends_with("/config.json") {
                Answer::config(&commit, &etag)
            } else {
                Answer::not_found()
            }
        });
        let e = run_fails(cli_with(&cache, Some(&url)), &["ledger", "--model", "org/model"]);
        assert!(e.contains(named) && e.contains("nothing was written"), "{named}: {e}");
        assert!(files_under(&cache).is_empty(), "{named}: {:?}", files_under(&cache));
        assert!(files_under(&outside).is_empty(), "{named}: {:?}", files_under(&outside));
    }
}

/// The download writes the `huggingface_hub` layout: the blob named by its hash, the snapshot
/// file a relative link to it, the ref holding the commit; a 64-hex (LFS) hash and an
/// `X-Linked-Etag` work too, and an index the repo has is fetched at the same commit.
#[test]
fn a_download_writes_the_huggingface_hub_cache_layout() {
    let cache = scratch("layout");
    let sha256 = "ab".repeat(32);
    let index = br#"{"metadata": {}, "weight_map": {"lm_head.weight": "model-00001-of-00001.safetensors"}}"#;
    let linked = sha256.clone();
    let (url, seen) = scripted_hub("127.0.0.1", move |path, _| {
        if path.ends_with("/config.json") {
            Answer::config(COMMIT_A, &format!("W/\"{}\"", ETAG.to_uppercase()))
        } else if path == format!("/org/model/resolve/{COMMIT_A}/model.safetensors.index.json") {
            let (c, e) = (format!("X-Repo-Commit: {COMMIT_A}"), format!("X-Linked-Etag: \"{linked}\""));
            Answer::new("200 OK", &[&c, &e, "ETag: \"not-a-hash\""], index)
        } else {
            Answer::not_found()
        }
    });
    run_ok(cli_with(&cache, Some(&url)), &["kv", "--model", "org/model"]);
    let repo = cache.join("models--org--model");
    assert_eq!(std::fs::read_to_string(repo.join("refs/main")).unwrap(), COMMIT_A);
    assert_eq!(std::fs::read(repo.join("blobs").join(ETAG)).unwrap(), LLAMA_8B.as_bytes());
    assert_eq!(std::fs::read(repo.join("blobs").join(&sha256)).unwrap(), index);
    let snap = repo.join("snapshots").join(COMMIT_A);
    assert_eq!(std::fs::read_link(snap.join("config.json")).unwrap(), Path::new("../../blobs").join(ETAG));
    assert_eq!(
        std::fs::read_link(snap.join("model.safetensors.index.json")).unwrap(),
        Path::new("../../blobs").join(&sha256)
    );
    assert_eq!(files_under(&cache).len(), 5, "{:?}", files_under(&cache));
    // config.json, the index and ModelOpt's hf_quant_config.json (absent here: 404).
    let requests = seen.lock().unwrap().requests.clone();
    assert_eq!(requests.len(), 3, "{requests:?}");
}

/// A 2 GiB body is not read: refused by its Content-Length before any byte, and without one,
/// reading stops at the cap; nothing is written.
#[test]
fn a_huge_body_is_refused_at_the_cap() {
    for length in [true, false] {
        let cache = scratch("huge");
        let (url, seen) = scripted_hub("127.0.0.1", move |path, _| {
            if !path.ends_with("/config.json") {
                return Answer::not_found();
            }
            let mut a = Answer::config(COMMIT_A, &format!("\"{ETAG}\""));
            a.body = Body::Zeros(2 << 30);
            a.length = length;
            a
        });
        let e = run_fails(cli_with(&cache, Some(&url)), &["ledger", "--model", "org/model"]);
        assert!(e.contains("the file is larger than the 4 MiB limit on its download"), "{e}");
        assert!(files_under(&cache).is_empty(), "{:?}", files_under(&cache));
        // The client hung up at the cap: the server wrote at most the cap and its socket buffers.
        let sent = seen.lock().unwrap().body_bytes_sent;
        assert!(sent < 64 << 20, "{sent} bytes sent");
    }
}

/// A redirect loop ends after the redirect limit, one line, nothing written.
#[test]
fn a_redirect_loop_stops_at_the_limit() {
    let cache = scratch("loop");
    let (url, seen) =
        scripted_hub("127.0.0.1", |path, _| Answer::new("302 Found", &[&format!("Location: {path}")], b""));
    let e = run_fails(cli_with(&cache, Some(&url)), &["ledger", "--model", "org/model"]);
    assert!(e.contains("more than 5 redirects"), "{e}");
    assert_eq!(seen.lock().unwrap().requests.len(), 6, "the first request and 5 redirects");
    assert!(files_under(&cache).is_empty());
}

/// The token goes with a relative redirect (the same Hub) but never to the host an absolute
/// redirect names.
#[test]
fn the_token_is_never_sent_to_another_host() {
    let (cdn, cdn_seen) = scripted_hub("127.0.0.2", |_, _| Answer::new("200 OK", &[], LLAMA_8B.as_bytes()));
    let (hub, hub_seen) = scripted_hub("127.0.0.1", move |path, req| {
        let authorised = req.to_ascii_lowercase().contains("authorization: bearer hf_secret");
        let meta = [format!("X-Repo-Commit: {COMMIT_A}"), format!("X-Linked-Etag: \"{ETAG}\"")];
        let meta: Vec<&str> = meta.iter().map(String::as_str).collect();
        if !authorised {
            Answer::new("401 Unauthorized", &[], b"")
        } else if path == "/org/gated/resolve/main/config.json" {
            Answer::new("307 Temporary Redirect", &["Location: /api/resolve-cache/config.json"], b"")
        } else if path == "/api/resolve-cache/config.json" {
            let to = format!("Location: {cdn}/blob/config.json?signed=1");
            Answer::new("302 Found", &[&[to.as_str()][..], &meta].concat(), b"")
        } else {
            Answer::not_found()
        }
    });
    let cache = scratch("token-hosts");
    let mut c = cli_with(&cache, Some(&hub));
    c.env("HF_TOKEN", "hf_secret");
    run_ok(c, &["kv", "--model", "org/gated"]);
    let to_hub = hub_seen.lock().unwrap().requests.clone();
    assert!(to_hub.len() >= 2 && to_hub.iter().all(|r| r.to_ascii_lowercase().contains("bearer hf_secret")));
    let to_cdn = cdn_seen.lock().unwrap().requests.clone();
    assert_eq!(to_cdn.len(), 1, "{to_cdn:?}");
    assert!(!to_cdn[0].to_ascii_lowercase().contains("authorization"), "{}", to_cdn[0]);
    assert!(!to_cdn[0].contains("hf_secret"));
}

/// A server that answers a byte at a time is stopped by the deadline on the whole download (not
/// only a silent one).
#[test]
fn a_trickling_hub_is_stopped_by_the_download_deadline() {
    let cache = scratch("trickle");
    let (url, _) = scripted_hub("127.0.0.1", |_, _| {
        let mut a = Answer::config(COMMIT_A, &format!("\"{ETAG}\""));
        a.body = Body::Trickle(LLAMA_8B.as_bytes().to_vec());
        a
    });
    let mut c = cli_with(&cache, Some(&url));
    c.env("HF_HUB_DOWNLOAD_TIMEOUT", "1");
    let e = run_fails(c, &["ledger", "--model", "org/model"]);
    assert!(e.contains("no answer within 1 s (HF_HUB_DOWNLOAD_TIMEOUT"), "{e}");
    assert!(files_under(&cache).is_empty());
}

/// A model page's URL, pasted as is, and `org/name@REV` are the repo id (at that revision).
#[test]
fn a_pasted_hub_url_or_an_id_at_a_revision_is_the_repo_id() {
    let cache = scratch("urls");
    let two_layers = LLAMA_8B.replace("\"num_hidden_layers\": 32", "\"num_hidden_layers\": 2");
    put_snapshot(&cache, "org/model", COMMIT_A, Some("main"), &[("config.json", LLAMA_8B.as_bytes())]);
    put_snapshot(&cache, "org/model", COMMIT_B, Some("small"), &[("config.json", two_layers.as_bytes())]);
    let json = |model: &str, extra: &[&str]| {
        let out =
            run_ok(cli_with(&cache, None), &[&["ledger", "--format", "json", "--model", model][..], extra].concat());
        let v: Value = serde_json::from_str(&out).unwrap();
        (v["inputs"]["model"].as_str().unwrap().to_string(), v["total"]["weight_bytes"].as_f64().unwrap())
    };
    let main = json("org/model", &[]);
    let small = json("org/model", &["--revision", "small"]);
    assert!(small.1 < main.1 / 2.0);
    for url in ["https://huggingface.co/org/model", "https://huggingface.co/org/model/tree/main", "hf.co/org/model/"] {
        assert_eq!(json(url, &[]), main, "{url}");
    }
    for small_url in [
        "org/model@small",
        "https://huggingface.co/org/model/tree/small",
        "https://huggingface.co/org/model/blob/small/config.json",
    ] {
        assert_eq!(json(small_url, &[]), small, "{small_url}");
    }
    assert_eq!(json("org/model@small", &["--revision", "small"]), small);
    let e = run_fails(cli_with(&cache, None), &["ledger", "--model", "org/model@small", "--revision", "main"]);
    assert!(e.starts_with("error: invalid `--revision`: \"main\" given with `--model org/model@small`"), "{e}");
}

/// A repo id in another case than the cached one names the cached one.
#[test]
fn a_hub_id_in_the_wrong_case_names_the_cached_id() {
    let cache = scratch("case");
    put_snapshot(&cache, "meta-llama/Llama-3.1-8B", COMMIT_A, Some("main"), &[("config.json", LLAMA_8B.as_bytes())]);
    let e = run_fails(cli_with(&cache, None), &["ledger", "--model", "meta-llama/llama-3.1-8b"]);
    assert!(
        e.ends_with("the cache holds `meta-llama/Llama-3.1-8B` (repo ids are case-sensitive here): did you mean `--model meta-llama/Llama-3.1-8B`?"),
        "{e}"
    );
    // The same in a URL.
    let e = run_fails(cli_with(&cache, None), &["ledger", "--model", "https://huggingface.co/Meta-Llama/llama-3.1-8B"]);
    assert!(e.contains("did you mean `--model meta-llama/Llama-3.1-8B`?"), "{e}");
}

/// A token with a CR/LF (or any control character) would add headers of its own to the request
/// and, in a message, print the secret: it is refused before any request, and not shown.
#[test]
fn a_token_with_control_characters_is_refused_unshown() {
    let cache = scratch("bad-token");
    let (url, seen) = scripted_hub("127.0.0.1", |_, _| Answer::config(COMMIT_A, &format!("\"{ETAG}\"")));
    for token in ["abc\r\nX-Injected: 1", "secret with space", "tab\tsecret"] {
        let mut c = cli_with(&cache, Some(&url));
        c.env("HF_TOKEN", token);
        let e = run_fails(c, &["ledger", "--model", "org/model"]);
        assert!(e.contains("invalid `HF_TOKEN`") && e.contains("not shown"), "{e}");
        assert!(!e.contains("abc") && !e.contains("secret") && !e.contains("Injected"), "{e}");
    }
    // The same for a token file.
    let file = cache.join("token-file");
    std::fs::write(&file, "abc\u{1b}[31m").unwrap();
    let mut c = cli_with(&cache, Some(&url));
    c.env("HF_TOKEN_PATH", &file);
    let e = run_fails(c, &["ledger", "--model", "org/model"]);
    assert!(e.contains("invalid token file") && !e.contains("abc"), "{e}");
    assert!(seen.lock().unwrap().requests.is_empty(), "no request was sent");
}
