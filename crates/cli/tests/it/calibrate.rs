//! `llm-ledger calibrate`: a CSV of measurements in, fitted constants and a profile out, and the
//! profile read back with `--profile`.

use crate::harness::{cli, fails, json, ok, temp_file};
use std::path::Path;

/// The ledger's expected step time of a decode step, seconds.
fn step_s(args: &[&str]) -> f64 {
    let mut all = vec!["ledger", "--format", "json"];
    all.extend_from_slice(args);
    json(&all)["step_time_s"].as_f64().unwrap()
}

/// Measurements that are the clock's own decode steps × 1.1 (a GPU 10 % slower than the clock
/// thinks on memory-bound kernels): the fit finds memory_scale 1.1 and no extra kernel cost, and the
/// profile it writes makes the ledger predict the measurement.
#[test]
fn a_profile_fitted_to_slower_decode_steps_reproduces_them() {
    let shapes = [("1", "2048"), ("8", "1024"), ("4", "8192"), ("16", "512"), ("2", "4096")];
    let mut csv = String::from("model,gpu,batch,ctx,tpot_ms\n");
    for (b, c) in shapes {
        let t = step_s(&["--gpu", "h100-sxm", "--batch", b, "--ctx", c]) * 1.1;
        csv.push_str(&format!("llama-3-8b,h100-sxm,{b},{c},{}\n", t * 1e3));
    }
    let file = temp_file("calibrate-slow.csv", csv.as_bytes());
    let out = temp_file("calibrate-slow-profile.toml", b"");
    let v = json(&["calibrate", &file, "--out", &out, "--format", "json"]);
    let scale = v["profile"]["memory_scale"].as_f64().unwrap();
    assert!((scale - 1.1).abs() < 0.01, "{v}");
    // A per-kernel cost would add the same time to every step, which the rows do not show: it
    // stays far below the clock's own 4.5 µs per kernel. No row is compute-bound, so the compute
    // scale is undetermined (JSON null), while the memory scale is known.
    assert!(v["profile"]["kernel_s"].as_f64().unwrap() < 1e-6, "{v}");
    assert!(v["relative_std_errors"][1].is_null() && v["relative_std_errors"][0].is_number(), "{v}");
    assert!(v["median_abs_error_after"].as_f64().unwrap() < 0.005, "{v}");
    // Before: the clock predicts 1/1.1 of each measurement, 9.1 % fast.
    assert!((v["median_abs_error_before"].as_f64().unwrap() - (1.0 - 1.0 / 1.1)).abs() < 1e-3, "{v}");
    let text = std::fs::read_to_string(&out).unwrap();
    assert!(text.contains("memory_scale = 1.") && text.contains("[fit]"), "{text}");
    for (b, c) in shapes {
        let plain = step_s(&["--batch", b, "--ctx", c]);
        let profiled = step_s(&["--batch", b, "--ctx", c, "--profile", &out]);
        assert!((profiled / plain - 1.1).abs() < 0.006, "{b}×{c}: {profiled} vs {plain}");
    }
    // The table names the constants and the file written.
    let table = ok(&["calibrate", &file]);
    assert!(table.contains("memory_scale") && table.contains("4 constants fitted on 5 rows"), "{table}");
}

#[test]
fn bad_measurement_files_are_one_line_errors() {
    let cases: [(&str, &str, &str); 11] = [
        ("cal-none.csv", "model,batch\nllama-3-8b,1\n", "exactly one measurement column"),
        ("cal-two.csv", "batch,step_ms,tpot_ms\n1,5,5\n", "exactly one measurement column"),
        ("cal-unknown.csv", "batch,speed,step_ms\n1,2,5\n", "unknown column `speed`"),
        (
            "cal-neg.csv",
            "batch,step_ms\n1,-5\n2,5\n3,5\n",
            "line 2: `step_ms` = \"-5\" (a step time in milliseconds, 1 µs to 1 hour: a number in [0.001, 3.6e6])",
        ),
        ("cal-few.csv", "batch,step_ms\n1,5\n2,5\n3,5\n", "3 measurement rows (at least 4"),
        ("cal-gpu.csv", "gpu,step_ms\nh900,5\nh100-sxm,5\nh100-sxm,6\nh100-sxm,7\n", "line 2"),
        ("cal-phase.csv", "phase,ttft_ms\ndecode,5\nprefill,5\nprefill,6\nprefill,7\n", "row 1"),
        ("cal-op-name.csv", "op,op_us\nqproj,5\nq_proj,5\nq_proj,6\nq_proj,7\n", "line 2"),
        ("cal-op-none.csv", "op,op_us\n,5\nq_proj,5\nq_proj,6\nq_proj,7\n", "row 1"),
        ("cal-op-fused.csv", "op,op_us\nrope,5\nq_proj,5\nq_proj,6\nq_proj,7\n", "fuses this one"),
        ("cal-op-step.csv", "op,step_ms\nq_proj,5\n,5\n,6\n,7\n", "row 1"),
    ];
    for (name, text, want) in cases {
        let e = fails(&["calibrate", &temp_file(name, text.as_bytes())]);
        assert!(e.contains(want), "{name}: {e}");
    }
    let e = fails(&[
        "ledger",
        "--profile",
        &temp_file("bad-profile.toml", b"memory_scale = 50\ncompute_scale = 1\nkernel_s = 0\n"),
    ]);
    assert!(e.contains("`memory_scale`"), "{e}");
}

/// A profiler's per-kernel times (one layer's kernel each, `op` + `op_us`): the clock's own
/// kernel times × 1.25 on memory-bound kernels are fitted back to memory_scale 1.25, and the
/// table names each row's operator.
#[test]
fn per_kernel_rows_fit_the_profile() {
    let kernel_us = |op: &str, b: &str| {
        let v = json(&["ledger", "--format", "json", "--batch", b, "--ctx", "2048"]);
        let row = v["rows"].as_array().unwrap().iter().find(|r| r["op"] == op).unwrap().clone();
        row["time_s"].as_f64().unwrap() / row["layers"].as_f64().unwrap() * 1e6
    };
    let mut csv = String::from("op,batch,ctx,op_us\n");
    for (op, b) in [("q_proj", "1"), ("gate_proj", "1"), ("down_proj", "8"), ("o_proj", "4"), ("lm_head", "2")] {
        csv.push_str(&format!("{op},{b},2048,{}\n", kernel_us(op, b) * 1.25));
    }
    let file = temp_file("calibrate-kernels.csv", csv.as_bytes());
    let v = json(&["calibrate", &file, "--format", "json"]);
    let scale = v["profile"]["memory_scale"].as_f64().unwrap();
    assert!((scale - 1.25).abs() < 0.01, "{v}");
    assert_eq!(v["rows"][1]["op"], "gate_proj");
    assert_eq!(v["rows"][0]["metric"], "op_s");
    let table = ok(&["calibrate", &file]);
    assert!(table.contains("op_s down_proj"), "{table}");
}

/// The benchmark files in each tool's documented schema (`tests/data/benchmarks`).
const BENCHMARKS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/benchmarks");

/// The step time the ledger predicts for `model` on the H100 under the vLLM engine and a profile.
fn vllm_step_s(model: &str, phase: &str, batch: u64, ctx: u64, profile: &str) -> f64 {
    let (b, c) = (batch.to_string(), ctx.to_string());
    let args =
        ["--model", model, "--gpu", "h100-sxm", "--engine", "vllm", "--phase", phase, "--batch", &b, "--ctx", &c];
    step_s(&[&args[..], &["--profile", profile]].concat())
}

/// Serving runs written as vLLM's `benchmark_serving.py --save-result --append-result` would
/// (JSON Lines), measured on a GPU whose memory-bound kernels are 10 % slower than the clock
/// thinks and whose host adds 2 ms per step: the fit recovers both, prints each row before and
/// after, writes the profile, and a ledger under that profile predicts the measured step.
#[test]
fn vllm_serving_runs_fit_the_host_time_and_the_scales() {
    let truth = temp_file(
        "calibrate-vllm-truth.toml",
        b"memory_scale = 1.1\ncompute_scale = 1.0\nkernel_s = 0\nhost_step_s = 2e-3\n",
    );
    let mut lines = String::new();
    // (model, concurrency, prompt, output): a decode step at ctx = prompt + output / 2.
    for (model, c, prompt, output) in [
        ("llama-3-8b", 1, 512, 128),
        ("llama-3-8b", 16, 1024, 256),
        ("llama-3-8b", 64, 2048, 256),
        ("llama-3.2-1b", 8, 256, 512),
        ("llama-3.2-1b", 32, 4096, 128),
    ] {
        let step = vllm_step_s(model, "decode", c, prompt + output / 2, &truth);
        let ttft = vllm_step_s(model, "prefill", 1, prompt, &truth);
        let n = 100;
        lines.push_str(
            &serde_json::json!({
                "backend": "vllm", "model_id": model, "num_prompts": n, "request_rate": "inf",
                "max_concurrency": c, "completed": n, "total_input_tokens": n * prompt,
                "total_output_tokens": n * output, "mean_ttft_ms": ttft * 1e3, "mean_tpot_ms": step * 1e3,
                "mean_itl_ms": step * 1e3 * 1.01, "output_throughput": c as f64 / step,
            })
            .to_string(),
        );
        lines.push('\n');
    }
    let file = temp_file("calibrate-vllm-runs.jsonl", lines.as_bytes());
    let out = temp_file("calibrate-vllm-profile.toml", b"");
    std::fs::remove_file(&out).unwrap();
    let v = json(&["calibrate", &file, "--gpu", "h100-sxm", "--out", &out, "--format", "json"]);
    let p = &v["profile"];
    assert!((p["host_step_s"].as_f64().unwrap() / 2e-3 - 1.0).abs() < 0.03, "{v}");
    assert!((p["memory_scale"].as_f64().unwrap() / 1.1 - 1.0).abs() < 0.02, "{v}");
    assert_eq!(v["determined"][3], true, "{v}");
    assert!(v["relative_std_errors"][3].is_number(), "{v}");
    assert_eq!(v["rows"].as_array().unwrap().len(), 15, "three rows per run: {v}");
    assert_eq!(v["rows"][1]["metric"], "ttft_s");
    assert!(v["rows"][4]["source"].as_str().unwrap().ends_with("calibrate-vllm-runs.jsonl #2"), "{v}");
    assert!(v["median_abs_error_after"].as_f64().unwrap() < 0.01, "{v}");
    let profile = std::fs::read_to_string(&out).unwrap();
    let written: f64 = profile.lines().find_map(|l| l.strip_prefix("host_step_s = ")).unwrap().parse().unwrap();
    assert!(
        (written / 2e-3 - 1.0).abs() < 0.03 && profile.contains("relative_std_error_host_step_s = 0."),
        "{profile}"
    );
    // The ledger under the written profile predicts the measured step.
    let fitted = vllm_step_s("llama-3-8b", "decode", 16, 1152, &out);
    let measured = vllm_step_s("llama-3-8b", "decode", 16, 1152, &truth);
    assert!((fitted / measured - 1.0).abs() < 0.01, "{fitted} vs {measured}");
    // The table: a row per measurement with its source, before and after, and the four constants.
    let table = ok(&["calibrate", &file, "--gpu", "h100-sxm"]);
    assert!(table.contains("calibrate-vllm-runs.jsonl #1") && table.contains("before"), "{table}");
    assert!(table.contains("host_step_s   2.0") && table.contains("4 constants fitted on 15 rows"), "{table}");
}

/// One file of each tool, together: the format of each comes from its keys, and each run's
/// measurements are compared with the step its file states (batch = concurrency, context = mean
/// prompt + half the mean output; TTFT a prefill of one mean prompt).
#[test]
fn each_benchmark_format_is_read_from_its_documented_schema() {
    let f = |name: &str| format!("{BENCHMARKS}/{name}");
    let (vllm, genai, trtllm) =
        (f("vllm-serving.json"), f("profile_export_genai_perf.json"), f("trtllm-bench-report.json"));
    let v = json(&["calibrate", &vllm, &genai, &trtllm, "--model", "llama-3-8b", "--gpu", "h100-sxm", "-f", "json"]);
    let rows = v["rows"].as_array().unwrap();
    let sources: Vec<&str> = rows.iter().map(|r| r["source"].as_str().unwrap()).collect();
    assert_eq!(
        sources,
        [
            "vllm-serving.json #1",
            "vllm-serving.json #1",
            "vllm-serving.json #1",
            "profile_export_genai_perf.json #1",
            "profile_export_genai_perf.json #1",
            "profile_export_genai_perf.json #1",
            "trtllm-bench-report.json #1",
            "trtllm-bench-report.json #1",
            "trtllm-bench-report.json #1",
        ]
    );
    assert_eq!(rows[0]["measured"].as_f64().unwrap(), 9.6e-3);
    assert_eq!(rows[2]["measured"].as_f64().unwrap(), 1625.4);
    let plain = |engine: &str, phase: &str, b: &str, c: &str| {
        step_s(&["--gpu", "h100-sxm", "--engine", engine, "--phase", phase, "--batch", b, "--ctx", c])
    };
    let before = |i: usize| rows[i]["predicted_before"].as_f64().unwrap();
    // vLLM: max_concurrency 16; 1,024 prompt + 256 / 2 output tokens; backend vllm.
    assert_eq!(before(0), plain("vllm", "decode", "16", "1152"));
    assert_eq!(before(1), plain("vllm", "prefill", "1", "1024"));
    assert!((before(2) - 16.0 / plain("vllm", "decode", "16", "1152")).abs() < 1e-9);
    // genai-perf: concurrency 8; 512 + 256 / 2; backend tensorrtllm.
    assert_eq!(before(3), plain("trtllm", "decode", "8", "640"));
    // trtllm-bench: 63.7 concurrent requests on average → 64; 128 + 128 / 2.
    assert_eq!(before(6), plain("trtllm", "decode", "64", "192"));
    assert_eq!(before(7), plain("trtllm", "prefill", "1", "128"));
    // --format-in names the format, and a CSV beside them is read as a CSV.
    let e = fails(&["calibrate", &genai, "--format-in", "vllm", "--gpu", "h100-sxm", "--model", "llama-3-8b"]);
    assert!(e.contains("record 1: missing field `completed`"), "{e}");
    let e = fails(&["calibrate", &vllm, "--format-in", "json", "--gpu", "h100-sxm"]);
    assert!(e.contains("`--format-in`") && e.contains("csv, vllm, genai-perf, trtllm-bench"), "{e}");
}

/// Bad benchmark files: one line naming the file, the record and the field; exit 2; no profile
/// written.
#[test]
fn bad_benchmark_files_are_one_line_errors_and_write_nothing() {
    let base = serde_json::json!({
        "backend": "vllm", "model_id": "llama-3-8b", "completed": 10, "total_input_tokens": 5120,
        "total_output_tokens": 1280, "max_concurrency": 4, "mean_ttft_ms": 30.0, "mean_tpot_ms": 8.0,
        "output_throughput": 480.0,
    });
    let with = |key: &str, value: serde_json::Value| {
        let mut v = base.clone();
        if value.is_null() {
            v.as_object_mut().unwrap().remove(key);
        } else {
            v[key] = value;
        }
        format!("{base}\n{v}\n")
    };
    let cases: Vec<(&str, String, &str)> = vec![
        ("bench-unknown.json", r#"{"throughput": 3}"#.into(), "record 1: a JSON of unknown schema"),
        (
            "bench-missing.json",
            with("total_output_tokens", serde_json::Value::Null),
            "record 2: missing field `total_output_tokens`",
        ),
        (
            "bench-nan.json",
            with("mean_tpot_ms", 0.into()).replace("\"mean_tpot_ms\":0", "\"mean_tpot_ms\":NaN"),
            "record 2: `mean_tpot_ms` = NaN",
        ),
        ("bench-negative.json", with("mean_ttft_ms", (-3.0).into()), "record 2: `mean_ttft_ms` = -3 (a time to first"),
        (
            "bench-concurrency.json",
            with("max_concurrency", serde_json::Value::Null),
            "record 2: missing field `max_concurrency`",
        ),
        (
            "bench-model.json",
            with("model_id", "no-such-org/no-such-model".into()),
            "record 2: `model_id` = \"no-such-org/no-such-model\"",
        ),
        ("bench-text.json", "{ not json at all".into(), "a JSON of unknown schema"),
    ];
    let out = temp_file("bench-bad-profile.toml", b"");
    std::fs::remove_file(&out).unwrap();
    for (name, text, want) in cases {
        let file = temp_file(name, text.as_bytes());
        let e = fails(&["calibrate", &file, "--gpu", "h100-sxm", "--out", &out]);
        assert!(e.contains(&format!("`{file}`")) && e.contains(want), "{name}: {e}");
        assert!(!Path::new(&out).exists(), "{name}: nothing written");
    }
    let file = temp_file("bench-good.json", with("mean_tpot_ms", 9.into()).as_bytes());
    let e = fails(&["calibrate", &file, "--gpu", "h900", "--out", &out]);
    assert!(e.contains("h900"), "{e}");
    let e = fails(&["calibrate", &file, "--out", &out]);
    assert!(e.contains("`--gpu`") && e.contains("does not state the GPU"), "{e}");
    let e = fails(&["calibrate", &file, "--gpu", "h100-sxm", "--profile", &out]);
    assert!(e.contains("`--profile`"), "{e}");
    assert!(!Path::new(&out).exists());
    // Scenario flags describe benchmark runs; for CSVs alone they are refused, not ignored.
    let csv = temp_file("bench-rows.csv", b"batch,step_ms\n1,5\n2,5\n4,6\n8,7\n");
    let e = fails(&["calibrate", &csv, "--gpu", "h100-sxm"]);
    assert!(e.contains("scenario flags") && e.contains("a CSV states each row's scenario"), "{e}");
    // The same run twice plus a CSV's rows is a fit.
    ok(&["calibrate", &file, &csv, "--gpu", "h100-sxm", "--model", "llama-3-8b"]);
}

/// A vLLM `benchmark_serving.py` record of a run of llama-3-8b at concurrency 4, `key` set to
/// `value` (the JSON text) unless `key` is empty.
fn vllm_record(key: &str, value: &str) -> String {
    let mut v = serde_json::json!({
        "backend": "vllm", "model_id": "llama-3-8b", "completed": 10, "total_input_tokens": 5120,
        "total_output_tokens": 1280, "max_concurrency": 4, "mean_ttft_ms": 30.0, "mean_tpot_ms": 8.0,
        "output_throughput": 480.0,
    });
    if !key.is_empty() {
        v[key] = serde_json::from_str(value).unwrap();
    }
    v.to_string()
}

/// Three identical benchmark records determine none of the four constants: the fit is shown, but
/// `--out` writes no profile (it was written, and `--profile` then moved a step 12.7 → 15.0 ms
/// with no note); the one line says why and what rows would determine them.
#[test]
fn a_calibration_that_determines_nothing_writes_no_profile() {
    let record = vllm_record("", "");
    let file = temp_file("cal-same-runs.jsonl", format!("{record}\n{record}\n{record}\n").as_bytes());
    let out = temp_file("cal-same-profile.toml", b"");
    std::fs::remove_file(&out).unwrap();
    let v = json(&["calibrate", &file, "--gpu", "h100-sxm", "--format", "json"]);
    assert_eq!(v["determined"], serde_json::json!([false, false, false, false]), "{v}");
    let e = fails(&["calibrate", &file, "--gpu", "h100-sxm", "--out", &out]);
    assert!(
        e.starts_with("error: invalid `--out`: no profile written: the 9 rows of `")
            && e.contains("determine none of memory_scale, compute_scale, kernel_s, host_step_s")
            && e.contains("measure steps of different shapes: decode at several batches and contexts"),
        "{e}"
    );
    assert!(!Path::new(&out).exists(), "nothing written");
}

/// Each measurement has a physical range, refused by the field the user gave (a CSV column, a
/// benchmark field, a flag): 1e-308 ms once ended in "internal error: non-finite value".
#[test]
fn measurements_outside_their_physical_range_are_refused_by_their_field() {
    for (name, csv, want) in [
        (
            "cal-tiny.csv",
            "batch,step_ms\n1,1e-308\n2,5\n4,6\n8,7\n",
            "line 2: `step_ms` = \"1e-308\" (a step time in milliseconds, 1 µs to 1 hour: a number in [0.001, 3.6e6])",
        ),
        (
            "cal-huge.csv",
            "batch,tokens_per_s\n1,1e308\n2,5\n4,6\n8,7\n",
            "line 2: `tokens_per_s` = \"1e308\" (a throughput in tokens per second: a number in [0.001, 1e15])",
        ),
    ] {
        let e = fails(&["calibrate", &temp_file(name, csv.as_bytes())]);
        assert!(e.contains(want) && !e.contains("internal error"), "{name}: {e}");
    }
    for (key, value, want) in [
        ("mean_tpot_ms", "1e-308", "record 1: `mean_tpot_ms` = 1e-308 (a time per output token in milliseconds, 1 µs to 1 hour: a number in [0.001, 3.6e6])"),
        ("output_throughput", "1e308", "record 1: `output_throughput` = 1e308 (a throughput in tokens per second: a number in [0.001, 1e15])"),
    ] {
        let file = temp_file(&format!("cal-range-{key}.json"), vllm_record(key, value).as_bytes());
        let e = fails(&["calibrate", &file, "--gpu", "h100-sxm"]);
        assert!(e.contains(want), "{key}: {e}");
    }
    let e = fails(&["measure", "--step-ms", "1e-308"]);
    assert_eq!(e, "error: invalid `--step-ms`: 1e-308 (a number in [0.001, 3.6e6])");
    // In --tokens-per-s's range, but a femtosecond step at batch 1.
    let e = fails(&["measure", "--batch", "1", "--tokens-per-s", "1e15"]);
    assert!(
        e.starts_with(
            "error: invalid `--tokens-per-s`: 1e15 (a throughput whose step of 1 tokens takes between 1 µs and 1 hour"
        ),
        "{e}"
    );
    ok(&["measure", "--batch", "1", "--tokens-per-s", "133"]);
}

/// A record's fields are checked where they are read, and the error names the field the file
/// gave, never one derived from it (`completed: 1e-300` → "invalid `ctx`: 18446744073709551615").
#[test]
fn benchmark_fields_are_checked_where_they_are_read() {
    for (key, value, want) in [
        ("completed", "1e-300", "record 1: `completed` = 1e-300 (requests completed: a whole number from 1 to 1,000,000,000,000)"),
        ("max_concurrency", "1e300", "record 1: `max_concurrency` = 1e300 (concurrent requests: a whole number from 1 to 1,073,741,824)"),
        ("total_input_tokens", "5", "record 1: `total_input_tokens` = 5 over `completed` = 10 requests is a mean prompt of 0.5 tokens per request"),
    ] {
        let file = temp_file(&format!("cal-field-{key}.json"), vllm_record(key, value).as_bytes());
        let e = fails(&["calibrate", &file, "--gpu", "h100-sxm"]);
        assert!(e.contains(&format!("`{file}` {want}")) && !e.contains("`ctx`") && !e.contains("`batch`"), "{key}: {e}");
    }
}

/// A benchmark JSON saved with a byte-order mark is read as JSON (it was read as a CSV, and the
/// error was about scenario flags); an empty file and `null` are one line naming the file and
/// what it should hold.
#[test]
fn a_bom_is_skipped_and_empty_or_null_files_are_named() {
    let runs = [0, 1, 2, 3].map(|i| vllm_record("max_concurrency", &(1 << i).to_string())).join("\n");
    let file = temp_file("cal-bom.json", format!("\u{feff}{runs}\n").as_bytes());
    let v = json(&["calibrate", &file, "--gpu", "h100-sxm", "--format", "json"]);
    assert_eq!(v["rows"].as_array().unwrap().len(), 12, "{v}");
    let csv = temp_file("cal-bom.csv", "\u{feff}batch,step_ms\n1,7.5\n2,7.6\n4,7.8\n8,8.1\n".as_bytes());
    ok(&["calibrate", &csv]);
    for (name, text, want) in [
        ("cal-empty.json", "", "the file is empty; expected a CSV (a header line naming scenario inputs"),
        ("cal-null.json", "null\n", "the file holds the bare JSON value `null`; expected a CSV"),
    ] {
        let file = temp_file(name, text.as_bytes());
        let e = fails(&["calibrate", &file, "--gpu", "h100-sxm"]);
        assert!(e.starts_with(&format!("error: invalid `{file}`: {want}")) && !e.contains("flags"), "{name}: {e}");
    }
}

/// A benchmark file's model is taken as a preset (name or alias) or a Hub repo id, never as a
/// path: `model_id: /etc/passwd` was opened as a config, and a file named like the preset in the
/// current folder was read instead of the preset. A Hub id neither cached nor downloadable
/// (`HF_HUB_OFFLINE`, as every test runs) is refused naming the field, saying to give `--model`.
#[test]
fn a_benchmark_files_model_is_a_preset_or_a_hub_id_never_a_path() {
    let runs = |model: &str| {
        (0..4)
            .map(|i| {
                vllm_record("max_concurrency", &(1 << i).to_string()).replace("\"llama-3-8b\"", &format!("{model:?}"))
            })
            .collect::<Vec<_>>()
            .join("\n")
    };
    let file = temp_file("cal-model-path.jsonl", runs("/etc/passwd").as_bytes());
    let e = fails(&["calibrate", &file, "--gpu", "h100-sxm"]);
    assert_eq!(
        e,
        format!("error: invalid `{file}` record 1: `model_id` = \"/etc/passwd\" is not a model preset nor a Hub repo id (org/name); a benchmark file's model is read only as a model preset or a Hub repo id, never as a path: give `--model NAME` (a preset, a config.json or GGUF path, or a Hub repo id)")
    );
    ok(&["calibrate", &file, "--gpu", "h100-sxm", "--model", "llama-3-8b"]);
    let file = temp_file("cal-model-hub.jsonl", runs("no-such-org/no-such-model").as_bytes());
    let e = fails(&["calibrate", &file, "--gpu", "h100-sxm"]);
    assert!(
        e.contains("record 1: `model_id` = \"no-such-org/no-such-model\" is a Hub repo id that is not in the Hugging Face cache, and HF_HUB_OFFLINE forbids downloading it")
            && e.ends_with("give `--model NAME` (a preset, a config.json or GGUF path, or a Hub repo id)"),
        "{e}"
    );
    // An alias is the preset, and a file of the preset's name in the current folder is not read.
    let dir = Path::new(&temp_file("cal-model-dir-marker", b"")).with_file_name("cal-model-cwd");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("llama-3-8b"), b"{ not a config").unwrap();
    let file = temp_file("cal-model-preset.jsonl", runs("llama-3-8b").as_bytes());
    let out = cli().current_dir(&dir).args(["calibrate", &file, "--gpu", "h100-sxm"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}
