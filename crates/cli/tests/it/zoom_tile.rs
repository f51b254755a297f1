//! CLI tests of `llm-ledger zoom` and `llm-ledger tile`: the walk from the model to a tile in
//! decode and prefill (table snapshots), the JSON interfaces, and bad input (one line, exit 2).

use assert_cmd::Command;
use serde_json::Value;

fn run(args: &[&str]) -> assert_cmd::assert::Assert {
    Command::cargo_bin("llm-ledger").unwrap().args(args).assert()
}

fn stdout(args: &[&str]) -> String {
    String::from_utf8(run(args).success().get_output().stdout.clone()).unwrap()
}

fn json(args: &[&str]) -> Value {
    serde_json::from_str(&stdout(args)).unwrap()
}

/// One line on stderr naming the problem, nothing on stdout, exit code 2.
fn fails(args: &[&str], expected: &str) {
    let out = run(args).code(2).get_output().clone();
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(out.stdout.is_empty(), "{args:?}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with("error: ") && err.contains(expected), "{args:?}: {err}");
}

#[test]
fn zoom_walks_llama_3_8b_decode_from_the_model_to_a_tile() {
    for at in ["model", "layer.0", "layer.0.mlp", "layer.0.mlp.up", "layer.0.mlp.up.tiles"] {
        let out = stdout(&["zoom", "--at", at]);
        insta::assert_snapshot!(format!("zoom_decode_{at}"), out);
    }
}

#[test]
fn zoom_walks_llama_3_8b_prefill_down_to_the_mlp_and_attention_tiles() {
    for at in ["layer.0.mlp.up", "layer.0.mlp.up.tiles", "layer.0.attn.attention.tiles"] {
        let out = stdout(&["zoom", "--phase", "prefill", "--ctx", "4096", "--at", at]);
        insta::assert_snapshot!(format!("zoom_prefill_{at}"), out);
    }
}

#[test]
fn zoom_json_says_where_the_sums_stop_adding_up() {
    let model = json(&["zoom", "--format", "json"]);
    assert_eq!(model["level"], "model");
    assert_eq!(model["addup"]["exact"], true);
    assert_eq!(model["addup"]["flops_difference"], 0.0);
    assert_eq!(model["children"].as_array().unwrap().len(), 35);
    // 2 × parameters + the parts of the gap = FLOPs per token.
    let gap = &model["gap"];
    let parts: f64 = gap["items"].as_array().unwrap().iter().map(|i| i["flops_per_token"].as_f64().unwrap()).sum();
    let (fpt, two_p) = (gap["flops_per_token"].as_f64().unwrap(), gap["two_params_flops"].as_f64().unwrap());
    assert!((two_p + parts - fpt).abs() < 1e-6 * fpt);

    // Decode, MLP up at tile level: M = 1 in a 16-row tile, 224 tiles, FLOPs × 16.
    let up = json(&["zoom", "--at", "layer.0.mlp.up", "--format", "json"]);
    assert_eq!(up["addup"]["exact"], false);
    assert_eq!(up["addup"]["flops_ratio"], 16.0);
    assert_eq!(up["children"][0]["name"], "tiles");
    assert_eq!(up["children"][0]["count"], 224.0);
    let tiles = json(&["zoom", "--at", "layer.0.mlp.up.tiles", "--format", "json"]);
    assert_eq!(tiles["level"], "tiles");
    assert_eq!(tiles["addup"]["exact"], true);
    assert_eq!(tiles["breadcrumb"].as_array().unwrap().len(), 5);
    // Re-reads: A (1 × 4096, 2 B) by 224 tiles, B (4096 × 14336) once, C once.
    let expected = 2.0 * (4096.0 * 224.0 + 4096.0 * 14336.0 + 14336.0);
    assert_eq!(tiles["node"]["bytes"], expected);
}

#[test]
fn zoom_csv_lists_the_children() {
    let csv = stdout(&["zoom", "--at", "layer.0.attn", "--format", "csv"]);
    let mut lines = csv.lines();
    assert!(lines.next().unwrap().starts_with("name,path,count,flops,executed_flops,bytes,"));
    let names: Vec<&str> = lines.map(|l| l.split(',').next().unwrap()).collect();
    assert_eq!(names, ["norm", "q", "k", "v", "rope", "kv_write", "attention", "softmax", "o", "residual"]);
    let md = stdout(&["zoom", "--at", "layer.0", "--format", "md"]);
    assert!(md.contains("| attn |") && md.contains("| mlp |"), "{md}");
}

#[test]
fn tile_shows_the_decode_gemm_and_its_candidates() {
    insta::assert_snapshot!(
        "tile_decode_m1",
        stdout(&["tile", "--m", "1", "--n", "14336", "--k", "4096", "--gpu", "h100-sxm"])
    );
    insta::assert_snapshot!(
        "tile_forced_prefill",
        stdout(&["tile", "--m", "4096", "--n", "14336", "--k", "4096", "--tile", "128x256x64x3"])
    );
}

#[test]
fn tile_json_has_the_documented_fields() {
    // Forced 64×64×64, 4 stages on an H100, M = 1: T_N = 14336/64 = 224 tiles; shared memory
    // 4·(64·64 + 64·64)·2 = 65,536 B (+1 KiB) → 3 CTAs/SM; one wave of 396.
    let j = json(&["tile", "--m", "1", "--n", "14336", "--k", "4096", "--tile", "64x64x64x4", "--format", "json"]);
    assert_eq!((j["tile_m"].as_u64(), j["tile_n"].as_u64(), j["tile_k"].as_u64()), (Some(64), Some(64), Some(64)));
    assert_eq!(j["tiles"], 224);
    assert_eq!(j["waves"], 1);
    assert_eq!(j["ctas_per_sm"], 3);
    let flops = 2.0 * 4096.0 * 14336.0;
    assert_eq!(j["flops"], flops);
    assert_eq!(j["padded_flops"], 64.0 * flops);
    let ideal = 2.0 * (4096.0 + 4096.0 * 14336.0 + 14336.0);
    let tiled = 2.0 * (4096.0 * 224.0 + 4096.0 * 14336.0 + 14336.0);
    assert_eq!(j["ideal_bytes"], ideal);
    assert_eq!(j["tiled_bytes"], tiled);
    assert_eq!(j["reuse_factor"], tiled / ideal);
    assert_eq!(j["forced"], true);
    assert_eq!(j["candidates"].as_array().unwrap().len(), 15);
    // fp8 weights and activations run at the fp8 peak with BK doubled.
    let j = json(&[
        "tile",
        "--m",
        "4096",
        "--n",
        "4096",
        "--k",
        "4096",
        "--weights",
        "fp8",
        "--activations",
        "fp8",
        "--format",
        "json",
    ]);
    assert_eq!(j["math"], "fp8");
    assert!(j["tile_k"].as_u64().unwrap() >= 64);
    let csv = stdout(&["tile", "--m", "8", "--n", "4096", "--k", "4096", "--gpu", "l4", "--format", "csv"]);
    assert_eq!(csv.lines().count(), 16);
    assert!(csv.contains("needs 147 kB of shared memory"), "{csv}");
}

#[test]
fn bad_input_is_one_line_and_exit_code_2() {
    fails(&["tile", "--m", "0", "--n", "1", "--k", "1"], "invalid `--m`: 0 (an integer in 1..=");
    fails(&["tile", "--m", "1", "--n", "99999999999", "--k", "1"], "invalid `--n`: 99999999999");
    fails(&["tile", "--m", "-1", "--n", "1", "--k", "1"], "invalid `--m`: \"-1\" (a non-negative integer)");
    fails(&["tile", "--m", "1", "--n", "1", "--k", "1", "--tile", "128x"], "invalid `--tile`: \"128x\" (BMxBNxBK");
    fails(&["tile", "--m", "1", "--n", "1", "--k", "1", "--tile", "100x128x64"], "multiples of 16");
    fails(&["tile", "--m", "1", "--n", "1", "--k", "1", "--tile", "512x512x256x8"], "h100-sxm allows 232448 B");
    fails(&["tile", "--m", "1", "--n", "1", "--k", "1", "--gpu", "h900"], "unknown GPU `h900`");
    fails(
        &["tile", "--m", "1", "--n", "1", "--k", "1", "--weights", "int3"],
        "unknown precision for `--weights` `int3`",
    );
    fails(
        &["tile", "--m", "1", "--n", "1", "--k", "1", "--format", "xml"],
        "invalid value 'xml' for '--format <FORMAT>'",
    );
    fails(&["zoom", "--at", "layer.0.mlp.upp"], "accepted: layer.0.mlp.norm, layer.0.mlp.gate, layer.0.mlp.up,");
    fails(&["zoom", "--at", "layer.32"], "accepted: embedding, layer.0 … layer.31, final_norm, lm_head");
    fails(&["zoom", "--at", "layer.0.attn.norm.tiles"], "an elementwise operator has no tiles");
    fails(&["zoom", "--at", "embedding.tiles"], "the embedding is a gather");
    fails(&["zoom", "--batch", "0"], "invalid `--batch`: 0");
}
