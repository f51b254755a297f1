//! Hostile inputs to the long-running commands: the gamma sampler's range, the step budget,
//! Ctrl-C, exact latencies at extreme time scales, compact numbers and escaped echoes, and
//! calibrations the rows cannot determine.

use crate::harness::{fails, json, ok, temp_file};
use std::io::Read;
use std::process::Stdio;
use std::time::{Duration, Instant};

fn close(a: f64, b: f64, rel: f64) -> bool {
    ((a - b) / b).abs() <= rel
}

#[test]
fn a_gamma_cv_outside_the_samplers_range_is_refused_and_its_ends_run() {
    assert_eq!(
        fails(&["simulate", "--arrivals", "gamma", "--cv", "1e-160", "--requests", "10"]),
        "error: invalid `--cv`: 1e-160 (a number in [1e-4, 100])"
    );
    for cv in ["1e-4", "100"] {
        let v =
            json(&["simulate", "--arrivals", "gamma", "--cv", cv, "--requests", "30", "--output", "8", "-f", "json"]);
        assert_eq!(v["summary"]["completed"], 30, "cv {cv}");
    }
    assert_eq!(fails(&["simulate", "--rate", "5e-324"]), "error: invalid `--rate`: 5e-324 (a number in [1e-300, 1e6])");
}

#[test]
fn runs_estimated_past_the_step_budget_are_refused_before_they_start() {
    assert_eq!(
        fails(&["simulate", "--rate", "1..100", "--requests", "10000", "--prompt", "1", "--output", "460000", "--max-seqs", "1"]),
        "error: invalid `--max-steps`: 1e8 engine steps (100 runs of 10000 requests of 1 + 460000 tokens at ≤ 1 sequence per step need about 4.6e11 engine steps; raise it, or ask for fewer requests or shorter outputs)"
    );
    // A plan under load simulates every candidate at least once.
    let e = fails(&["plan", "--rate", "10", "--ttft-ms", "500", "--tpot-ms", "50", "--requests", "1000000"]);
    assert!(
        e.starts_with("error: invalid `--max-steps`: 1e8 engine steps (") && e.contains("runs of 1000000 requests"),
        "{e}"
    );
    // The budget is the flag's: a small one refuses a default run, and stops one whose estimate
    // is below it but which takes more (a lone request decodes one token per step).
    let e = fails(&["simulate", "--max-steps", "10"]);
    assert!(e.contains("invalid `--max-steps`: 10 engine steps (1 run of 1000 requests"), "{e}");
    let e = fails(&["simulate", "--rate", "0.01", "--requests", "20", "--output", "600", "--max-steps", "1000"]);
    assert_eq!(
        e,
        "error: invalid `--max-steps`: 1000 engine steps (the runs took more before they ended; raise it, or ask for fewer requests or shorter outputs)"
    );
    assert!(fails(&["simulate", "--max-steps", "0"])
        .contains("invalid `--max-steps`: 0 (engine steps over every run, from 1 to 10,000,000,000)"));
    assert!(fails(&["plan", "--tpot-ms", "50", "--max-steps", "5"]).contains("it applies only with --rate"));
}

#[test]
fn ctrl_c_stops_a_running_simulation_with_one_line_and_exit_code_130() {
    // About 4·10⁷ engine steps: minutes, long past the bound below.
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("llm-ledger"))
        .env("HF_HUB_OFFLINE", "1")
        .args(["simulate", "--rate", "1000", "--requests", "1000000", "--prompt", "1", "--output", "10000"])
        .args(["--max-steps", "10000000000"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Let it start simulating, then Ctrl-C.
    std::thread::sleep(Duration::from_millis(1500));
    let sent = std::process::Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap();
    assert!(sent.success());
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if Instant::now() > deadline {
            child.kill().unwrap();
            panic!("still running 60 s after Ctrl-C");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let mut err = String::new();
    child.stderr.take().unwrap().read_to_string(&mut err).unwrap();
    let mut out = String::new();
    child.stdout.take().unwrap().read_to_string(&mut out).unwrap();
    assert_eq!(status.code(), Some(130), "{err}");
    assert_eq!(err, "error: interrupted (Ctrl-C)\n");
    assert!(out.is_empty(), "{out}");
}

#[test]
fn latencies_stay_exact_at_extreme_time_scales_and_print_compactly() {
    let lat = json(&["latency", "--prompt", "512", "--output", "32", "-f", "json"]);
    let (ttft, tpot) = (lat["ttft_s"].as_f64().unwrap(), lat["tpot_s"].as_f64().unwrap());
    // One request every 10¹⁵ s: an absolute clock near 10¹⁷ s has a 16 s step.
    let sim =
        json(&["simulate", "--rate", "1e-15", "--requests", "100", "--prompt", "512", "--output", "32", "-f", "json"]);
    let s = &sim["summary"];
    for (name, want) in [("ttft_s", ttft), ("tpot_s", tpot)] {
        for k in ["mean", "p50", "p99"] {
            let got = s[name][k].as_f64().unwrap();
            assert!(close(got, want, 0.005), "{name} {k}: {got} vs {want}");
        }
    }
    // A trace whose second request arrives at 10³⁰⁰ s.
    let trace = temp_file("trace-1e300.csv", b"arrival_s,prompt_tokens,output_tokens\n0,512,32\n1e300,512,32\n");
    let v = json(&["simulate", "--trace", &trace, "-f", "json"]);
    assert!(close(v["summary"]["ttft_s"]["max"].as_f64().unwrap(), ttft, 1e-9), "{v}");
    // The title counts the trace's own requests; --requests replays its first rows, at most all of them.
    let table = ok(&["simulate", "--trace", &trace]);
    assert!(table.lines().next().unwrap().contains("· 2 requests of prompt from the trace"), "{table}");
    let e = fails(&["simulate", "--trace", &trace, "--requests", "5"]);
    assert!(e.contains("invalid `--requests`: 5") && e.contains("at most the trace's 2 requests"), "{e}");
    let first = json(&["simulate", "--trace", &trace, "--requests", "1", "--format", "json"]);
    assert_eq!(first["summary"]["completed"], 1, "{first}");
    // Extreme rates print as numbers with exponents, never hundreds of digits.
    for args in [&["--rate", "1e-300", "--requests", "3"][..], &["--trace", &trace]] {
        let mut all = vec!["simulate"];
        all.extend_from_slice(args);
        let table = ok(&all);
        let longest = table.split(|c: char| !c.is_ascii_digit()).map(str::len).max().unwrap();
        assert!(longest < 12, "a run of {longest} digits in\n{table}");
    }
}

#[test]
fn echoed_input_has_its_control_characters_escaped_and_names_the_right_flag() {
    let (code, out, err) = crate::harness::run(&["ledger", "--gpu", "h100\x1b[31mred"]);
    assert_eq!((code, out.as_str()), (2, ""));
    assert!(err.starts_with("error: unknown GPU `h100\\u{1b}[31mred`; "), "{err}");
    assert!(!err.contains('\x1b'), "a raw ESC byte in {err:?}");
    // A file name is echoed escaped too (a context the CLI adds).
    let e = fails(&["simulate", "--trace", "no\x07such\x1b.csv"]);
    assert!(e.contains("no\\u{7}such\\u{1b}.csv") && !e.contains('\x1b'), "{e:?}");
    // A step budget so large that its activations leave no room for the KV cache is the
    // token budget's fault, not the model's.
    assert_eq!(
        fails(&["simulate", "--max-batched-tokens", "16777216"]),
        "error: invalid `--max-batched-tokens`: 16777216 (a token budget per step whose activations leave room for KV cache next to the weights on the h100-sxm (at 16777216 none is left))"
    );
}

#[test]
fn identical_calibration_rows_leave_every_constant_undetermined() {
    let rows = "model,gpu,batch,ctx,step_ms\n".to_string() + &"llama-3-8b,h100-sxm,64,4096,21.5\n".repeat(4);
    let file = temp_file("calibrate-identical.csv", rows.as_bytes());
    let v = json(&["calibrate", &file, "-f", "json"]);
    assert_eq!(v["determined"], serde_json::json!([false, false, false, false]), "{v}");
    assert_eq!(v["relative_std_errors"], serde_json::json!([null, null, null, null]), "{v}");
    let table = ok(&["calibrate", &file]);
    assert_eq!(table.matches("undetermined by these rows").count(), 4, "{table}");
    assert!(!table.contains("± 0.0 %"), "{table}");
    // A profile that determines nothing is not written.
    let out = temp_file("calibrate-identical.toml", b"");
    let e = fails(&["calibrate", &file, "--out", &out]);
    assert!(e.contains("invalid `--out`: no profile written"), "{e}");
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "");
}

/// Decode steps at several batches and contexts determine the memory scale and the cost per
/// kernel, not the compute scale nor the host time: the profile says which, and a run with it
/// says so beside its numbers.
#[test]
fn a_profile_names_the_constants_its_rows_did_not_determine() {
    let mut rows = "model,gpu,batch,ctx,step_ms\n".to_string();
    for (b, c, ms) in [
        (1, 512, 7.275),
        (1, 4096, 7.3816),
        (8, 512, 7.6031),
        (8, 4096, 9.3509),
        (64, 512, 9.7317),
        (64, 4096, 20.2774),
    ] {
        rows.push_str(&format!("llama-3-8b,h100-sxm,{b},{c},{ms}\n"));
    }
    let file = temp_file("calibrate-partial.csv", rows.as_bytes());
    let out = temp_file("calibrate-partial.toml", b"");
    ok(&["calibrate", &file, "--out", &out]);
    let profile = std::fs::read_to_string(&out).unwrap();
    for name in ["compute_scale", "host_step_s"] {
        assert!(profile.contains(&format!("# {name}: undetermined by these rows")), "{profile}");
        assert!(profile.contains(&format!("relative_std_error_{name} = \"undetermined\"")), "{profile}");
    }
    assert!(!profile.contains("relative_std_error_memory_scale = \"undetermined\""), "{profile}");
    let table = ok(&["ledger", "--profile", &out]);
    assert!(table.contains("compute_scale, host_step_s not determined by the rows it was fitted on"), "{table}");
}
