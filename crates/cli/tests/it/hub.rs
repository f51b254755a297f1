//! Issue 16: `--model org/name` from the Hugging Face cache (a cache tree made here) and from a
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

/// Done-when of issue 16: `ledger --model meta-llama/Llama-3.1-8B` from a populated cache with no
/// network gives the numbers of the same config.json by path.
#[test]
fn issue_16_hub_id_from_the_cache_matches_the_config_by_path() {
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
fn issue_16_revision_picks_the_snapshot() {
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
fn issue_16_offline_without_the_snapshot_is_a_clear_error() {
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
fn issue_16_a_local_path_wins_over_a_repo_id() {
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
                format!("x-repo-commit: {COMMIT_A}\r\netag: \"e1\"\r\ncontent-range: bytes 0-0/{}\r\n", body.len());
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
fn issue_16_download_from_the_hub_endpoint() {
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
fn issue_16_download_errors_are_one_line() {
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
fn issue_16_a_silent_hub_times_out() {
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
fn issue_16_gated_repos_take_the_token() {
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
