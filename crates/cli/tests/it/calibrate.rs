//! `llm-ledger calibrate`: a CSV of measurements in, fitted constants and a profile out, and the
//! profile read back with `--profile`.

use crate::harness::{fails, json, ok, temp_file};

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
        ("cal-neg.csv", "batch,step_ms\n1,-5\n2,5\n3,5\n", "line 2: `step_ms` = \"-5\" (a positive number)"),
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
