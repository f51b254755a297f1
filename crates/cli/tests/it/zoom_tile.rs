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
    // The model is the layer stack; the rest of the step sits beside it.
    assert_eq!(model["children"].as_array().unwrap().len(), 32);
    let rest: Vec<&str> = model["rest"].as_array().unwrap().iter().map(|r| r["name"].as_str().unwrap()).collect();
    assert_eq!(rest, ["embedding", "final_norm", "lm_head"]);
    let step = &model["step"];
    assert_eq!(step["exact"], true);
    let f = |v: &Value| v["cost"]["flops"].as_f64().unwrap();
    assert_eq!(f(&step["step"]), f(&step["model"]) + f(&step["rest"]));
    assert_eq!(f(&step["step"]), f(&step["ledger"]));
    assert_eq!(f(&step["model"]), model["node"]["flops"].as_f64().unwrap());
    let ledger = json(&["ledger", "--format", "json"]);
    assert_eq!(f(&step["ledger"]), ledger["total"]["flops"].as_f64().unwrap());
    // 2 × the stack's parameters + the parts of the gap = the model's FLOPs per token.
    let gap = &model["gap"];
    let parts: f64 = gap["items"].as_array().unwrap().iter().map(|i| i["flops_per_token"].as_f64().unwrap()).sum();
    let (fpt, two_p) = (gap["flops_per_token"].as_f64().unwrap(), gap["two_params_flops"].as_f64().unwrap());
    assert!((two_p + parts - fpt).abs() < 1e-6 * fpt);
    assert_eq!(fpt, model["node"]["flops"].as_f64().unwrap() / gap["tokens"].as_f64().unwrap());

    // Decode, MLP up at tile level: M = 1 in a 16-row tile, 224 tiles, FLOPs × 16.
    let up = json(&["zoom", "--at", "layer.0.mlp.up", "--format", "json"]);
    assert_eq!(up["addup"]["exact"], false);
    assert_eq!(up["addup"]["flops_ratio"], 16.0);
    assert_eq!(up["children"][0]["name"], "tiles");
    assert_eq!(up["children"][0]["count"], 224.0);
    let tiles = json(&["zoom", "--at", "layer.0.mlp.up.tiles", "--format", "json"]);
    assert_eq!(tiles["level"], "tiles");
    assert_eq!(tiles["addup"]["exact"], true);
    // Four magnifications: model, layer, operation, tile.
    assert_eq!(tiles["breadcrumb"], serde_json::json!(["model", "layer.0", "layer.0.mlp.up", "layer.0.mlp.up.tiles"]));
    // Re-reads: A (1 × 4096, 2 B) by 224 tiles, B (4096 × 14336) once, C once.
    let expected = 2.0 * (4096.0 * 224.0 + 4096.0 * 14336.0 + 14336.0);
    assert_eq!(tiles["node"]["bytes"], expected);
}

#[test]
fn zoom_csv_lists_the_children() {
    // The layer level: its operators with their block (a block is a column, not a level).
    let csv = stdout(&["zoom", "--at", "layer.0", "--format", "csv"]);
    let mut lines = csv.lines();
    assert!(lines.next().unwrap().starts_with("name,path,block,kind,count,flops,executed_flops,bytes,"));
    let rows: Vec<(&str, &str)> = lines
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            (f[0], f[2])
        })
        .collect();
    let attn: Vec<&str> = rows.iter().filter(|r| r.1 == "attn").map(|r| r.0).collect();
    assert_eq!(attn, ["norm", "q", "k", "v", "rope", "kv_write", "attention", "softmax", "o", "residual"]);
    let mlp: Vec<&str> = rows.iter().filter(|r| r.1 == "mlp").map(|r| r.0).collect();
    assert_eq!(mlp, ["norm", "gate", "up", "act", "down", "residual"]);
    // A block's path is the same layer, its block marked.
    assert_eq!(stdout(&["zoom", "--at", "layer.0.attn", "--format", "csv"]), csv);
    let j = json(&["zoom", "--at", "layer.0.mlp", "--format", "json"]);
    assert_eq!(
        (j["path"].as_str(), j["level"].as_str(), j["focus"].as_str()),
        (Some("layer.0"), Some("layer"), Some("mlp"))
    );
    let md = stdout(&["zoom", "--at", "layer.0", "--format", "md"]);
    assert!(md.contains("| attn ") && md.contains("| mlp "), "{md}");
    // The model's CSV: the layers, then the rest of the step.
    let csv = stdout(&["zoom", "--format", "csv"]);
    let names: Vec<&str> = csv.lines().skip(1).map(|l| l.split(',').next().unwrap()).collect();
    assert_eq!(names.len(), 32 + 3);
    assert_eq!(&names[32..], ["embedding", "final_norm", "lm_head"]);
}

#[test]
fn zoom_under_tensor_and_pipeline_parallelism_is_the_ledgers_gpu() {
    // TP 2: the embedding and the LM head with their collectives, beside the model; the step is
    // the ledger's total (before, the collectives replaced them: 7.52 GFLOP against 8.05, and it
    // said "adds up exactly").
    for args in
        [&["--tp", "2"][..], &["--pp", "2", "--batch", "4"], &["--model", "mixtral-8x7b", "--ep", "2", "--batch", "8"]]
    {
        let mut a = vec!["zoom", "--format", "json"];
        a.extend_from_slice(args);
        let z = json(&a);
        let mut l = vec!["ledger", "--format", "json"];
        l.extend_from_slice(args);
        let ledger = json(&l);
        let step = &z["step"];
        assert_eq!(step["exact"], true, "{args:?}");
        for (zoom_field, ledger_field) in
            [("flops", "flops"), ("weight_bytes", "weight_bytes"), ("link_bytes", "link_bytes")]
        {
            let s = step["step"]["cost"][zoom_field].as_f64().unwrap();
            let t = ledger["total"][ledger_field].as_f64().unwrap();
            assert!((s - t).abs() <= 1e-9 * t.abs(), "{args:?} {zoom_field}: {s} vs {t}");
        }
        let t = ledger["total"]["time_s"].as_f64().unwrap();
        assert!((step["step"]["timing"]["time_s"].as_f64().unwrap() - t).abs() <= 1e-9 * t, "{args:?}");
    }
    let tp = stdout(&["zoom", "--tp", "2"]);
    assert!(tp.contains(" all_reduce_embedding ") && tp.contains(" all_gather_logits "), "{tp}");
    assert!(tp.contains("the ledger's total, exactly"), "{tp}");
    // With stages, a layer another stage runs is refused, naming the stage's layers.
    fails(
        &["zoom", "--format", "json", "--pp", "2", "--batch", "4", "--at", "layer.0"],
        "accepted: layer.16 … layer.31, final_norm, lm_head, pipeline_wait",
    );
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
    fails(&["tile", "--m", "0", "--n", "1", "--k", "1"], "invalid `--m`: 0 (an integer from 1 to ");
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
    fails(
        &["zoom", "--format", "json", "--at", "layer.0.mlp.upp"],
        "accepted: layer.0.mlp.norm, layer.0.mlp.gate, layer.0.mlp.up,",
    );
    fails(
        &["zoom", "--format", "json", "--at", "layer.32"],
        "accepted: embedding, layer.0 … layer.31, final_norm, lm_head",
    );
    fails(&["zoom", "--format", "json", "--at", "layer.0.attn.norm.tiles"], "an elementwise operator has no tiles");
    fails(&["zoom", "--format", "json", "--at", "embedding.tiles"], "the embedding is a gather");
    fails(&["zoom", "--batch", "0"], "invalid `--batch`: 0");
    // In a table the same paths show the deepest level this scenario has, with a note why.
    for (at, note) in [
        ("layer.32", "`llama-3-8b` has 32 layers (layer.0 … layer.31). Showing `model`"),
        ("layer.0.attn.norm.tiles", "is not cut into tiles (an elementwise operator has no tiles"),
    ] {
        let out = run(&["zoom", "--at", at]).success().get_output().clone();
        let err = String::from_utf8(out.stderr).unwrap();
        assert!(err.starts_with("note: ") && err.contains(note) && err.lines().count() == 1, "{at}: {err}");
    }
}

/// A path of 20,000 segments is answered at the deepest level it names (no path is deeper than
/// four steps below the model, so only those are tried), and echoed cut, not whole.
#[test]
fn a_path_of_thousands_of_segments_is_cut_short_and_echoed_cut() {
    let long = format!("layer.0.{}", vec!["x"; 20_000].join("."));
    let (code, out, err) = crate::harness::run(&["zoom", "--at", &long]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("zoom: model › layer.0"), "{out}");
    let note = err.lines().find(|l| l.starts_with("note:")).unwrap();
    assert!(note.len() < 600 && note.contains("bytes)") && note.contains("no `x` under `layer.0`"), "{note}");
    // One step past the tiles: the deepest level is the tiles, and the step is what is missing.
    let (_, _, err) = crate::harness::run(&["zoom", "--at", "layer.0.mlp.up.tiles.x"]);
    assert!(err.contains("there is no `x` under `layer.0.mlp.up.tiles`"), "{err}");
}
