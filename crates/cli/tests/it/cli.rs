//! End-to-end tests of the `llm-ledger` binary: the output contract (table snapshots, JSON keys,
//! CSV/Markdown) and bad input (one line on stderr, exit code 2, no panic).

use crate::harness::{fails, json, ok, run, temp_file};
use std::path::PathBuf;

#[test]
fn no_arguments_prints_the_default_ledger_and_a_hint() {
    let (code, out, err) = run(&[]);
    assert_eq!(code, 0);
    assert!(out.starts_with("llama-3-8b on h100-sxm · decode · batch 1 × 2,048 cached tokens"), "{out}");
    assert!(out.contains("lm_head"));
    assert_eq!(err.lines().count(), 1);
    assert!(err.starts_with("hint: "));
    // The default is `ledger` with its defaults.
    let (_, ledger, _) = run(&["ledger"]);
    assert_eq!(out, ledger);
}

#[test]
fn default_ledger_table() {
    insta::assert_snapshot!(run(&["ledger"]).1);
}

#[test]
fn seed_counting_table_at_batch_64() {
    insta::assert_snapshot!(run(&["ledger", "--counting", "seed", "--batch", "64"]).1);
}

#[test]
fn prefill_table() {
    insta::assert_snapshot!(
        run(&["ledger", "--phase", "prefill", "--ctx", "8192", "--batch", "2", "--flash", "off"]).1
    );
}

#[test]
fn models_and_gpus_tables() {
    insta::assert_snapshot!("models", run(&["models"]).1);
    insta::assert_snapshot!("gpus", run(&["gpus"]).1);
}

#[test]
fn json_is_the_stable_interface() {
    let v = json(&["ledger", "--format", "json", "--batch", "64"]);
    for key in ["inputs", "rows", "total", "step_time_s", "tokens_per_s", "memory_floor_s", "compute_floor_s"] {
        assert!(v.get(key).is_some(), "missing {key}");
    }
    assert_eq!(v["inputs"]["batch"], 64);
    assert_eq!(v["inputs"]["ctx"], 2048);
    assert_eq!(v["inputs"]["model"], "llama-3-8b");
    let rows = v["rows"].as_array().unwrap();
    assert!(rows.len() > 10);
    for r in rows.iter().chain([&v["total"]]) {
        for key in
            ["op", "flops", "bytes", "weight_bytes", "kv_bytes", "activation_bytes", "intensity", "time_s", "bound"]
        {
            assert!(r.get(key).is_some(), "row {r} lacks {key}");
        }
        assert!(r["flops"].is_number() && r["bytes"].is_number() && r["time_s"].is_number());
    }
    // The total is the sum of the rows.
    let sum: f64 = rows.iter().map(|r| r["bytes"].as_f64().unwrap()).sum();
    let total = v["total"]["bytes"].as_f64().unwrap();
    assert!((sum - total).abs() / total < 1e-12);
    // q_proj at batch 64: 2 · 64 · 4096 · 4096 · 32 layers = 68,719,476,736 FLOPs.
    let q = rows.iter().find(|r| r["op"] == "q_proj").unwrap();
    assert_eq!(q["flops"].as_f64().unwrap(), 68_719_476_736.0);
    assert_eq!(q["layers"], 32);
}

#[test]
fn seed_counting_json_matches_the_seed_total() {
    // The reference calculator, batch 64 × 2048: 1029.3 GFLOP, 32.19 GB.
    let v = json(&["ledger", "--format", "json", "--batch", "64", "--counting", "seed"]);
    assert_eq!(format!("{:.1}", v["total"]["flops"].as_f64().unwrap() / 1e9), "1029.3");
    assert_eq!(format!("{:.2}", v["total"]["bytes"].as_f64().unwrap() / 1e9), "32.19");
    assert_eq!(format!("{:.1}", v["step_time_s"].as_f64().unwrap() * 1e3), "12.0");
}

#[test]
fn csv_and_markdown() {
    let (_, csv, _) = run(&["ledger", "--format", "csv"]);
    let header = csv.lines().next().unwrap();
    assert!(header.starts_with("op,layers,flops,bytes,weight_bytes,kv_bytes,"), "{header}");
    assert!(csv.lines().last().unwrap().starts_with("total,"));
    let (_, md, _) = run(&["ledger", "--format", "md"]);
    assert!(md.starts_with("**llama-3-8b on h100-sxm"), "{md}");
    assert!(md.contains("| op | n | FLOPs |"));
}

#[test]
fn a_config_file_or_its_directory_is_a_model() {
    let text = br#"{"model_type": "llama", "hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32,
        "num_key_value_heads": 8, "intermediate_size": 14336, "vocab_size": 128256}"#;
    let path = temp_file("config.json", text);
    let by_file = json(&["ledger", "--model", &path, "--format", "json"]);
    let preset = json(&["ledger", "--format", "json"]);
    assert_eq!(by_file["total"], preset["total"]);
    let dir = PathBuf::from(&path).parent().unwrap().to_string_lossy().into_owned();
    let by_dir = json(&["ledger", "--model", &dir, "--format", "json"]);
    assert_eq!(by_dir["total"], preset["total"]);
}

#[test]
fn huge_contexts_compute_in_f64() {
    // A 10⁹-token context: 4·32·128·(10⁹+1)·32 attention FLOPs, finite and exact to f64.
    let v = json(&["ledger", "--ctx", "1000000000", "--format", "json"]);
    let att = v["rows"].as_array().unwrap().iter().find(|r| r["op"] == "attention").unwrap();
    assert_eq!(att["flops"].as_f64().unwrap(), 4.0 * 32.0 * 128.0 * 1_000_000_001.0 * 32.0);
}

#[test]
fn bad_inputs_get_one_line_and_exit_code_2() {
    let missing = fails(&["ledger", "--model", "/nonexistent/config.json"]);
    assert!(missing.contains("cannot read config.json `/nonexistent/config.json`"), "{missing}");

    let malformed = temp_file("malformed.json", b"{\"model_type\": \"llama\", ");
    let e = fails(&["ledger", "--model", &malformed]);
    assert!(e.contains("malformed config.json: EOF while parsing a value at line 1 column 24"), "{e}");

    let unknown = temp_file("unknown.json", br#"{"model_type": "bert", "hidden_size": 768}"#);
    let e = fails(&["ledger", "--model", &unknown]);
    assert!(
        e.contains("invalid `model_type`: \"bert\" (a family — deepseek_v2, deepseek_v3, deepseek_v32, deepseek_v4, exaone4, falcon, gemma2, gemma3, gemma4, gpt2"),
        "{e}"
    );

    let no_layers =
        temp_file("nolayers.json", br#"{"model_type": "llama", "hidden_size": 4096, "num_attention_heads": 32}"#);
    let e = fails(&["ledger", "--model", &no_layers]);
    assert!(e.contains("missing required field `num_hidden_layers` for model_type llama"), "{e}");

    let zero = temp_file(
        "zero.json",
        br#"{"model_type": "llama", "hidden_size": 0, "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 8, "vocab_size": 10}"#,
    );
    let e = fails(&["ledger", "--model", &zero]);
    assert!(e.contains("invalid `hidden_size`: 0 (an integer from 1 to 16,777,216)"), "{e}");

    let negative = temp_file(
        "negative.json",
        br#"{"model_type": "llama", "hidden_size": 64, "num_hidden_layers": -2, "num_attention_heads": 2, "intermediate_size": 8, "vocab_size": 10}"#,
    );
    assert!(fails(&["ledger", "--model", &negative]).contains("invalid `num_hidden_layers`: -2"));

    let heads = temp_file(
        "heads.json",
        br#"{"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 8, "num_key_value_heads": 3, "intermediate_size": 8, "vocab_size": 10}"#,
    );
    assert!(fails(&["ledger", "--model", &heads])
        .contains("invalid `num_key_value_heads`: 3 (a divisor of num_attention_heads (8))"));

    let binary = temp_file("binary.json", &[0xff, 0xfe, 0x00, 0x7b]);
    assert!(fails(&["ledger", "--model", &binary]).contains("is not UTF-8 text"));

    assert!(fails(&["ledger", "--gpu", "h900"])
        .contains("unknown GPU `h900`; did you mean `h200`? (23 accepted); `llm-ledger gpus` lists them"));
    assert!(fails(&["ledger", "--weights", "int3"])
        .contains("unknown precision for `--weights` `int3`; did you mean `int8` or `int4`? accepted: fp32, bf16"));
    assert!(fails(&["ledger", "--model", "llama-9"]).contains("unknown model `llama-9`; did you mean `llama-3-8b`"));
    assert!(fails(&["ledger", "--batch", "0"]).contains("invalid `--batch`: 0"));
    assert!(fails(&["ledger", "--batch", "-4"]).contains("invalid `--batch`: \"-4\" (a non-negative integer)"));
    assert!(fails(&["ledger", "--ctx", "lots"]).contains("invalid `--ctx`: \"lots\""));
    assert!(fails(&["ledger", "--ctx", "9999999999999999"]).contains("invalid `--ctx`"));
    // `--format` is a clap value enum; a bad value is clap's usage error.
    assert!(fails(&["ledger", "--format", "xml"])
        .contains("invalid value 'xml' for '--format <FORMAT>'; [possible values: table, json, csv, md]"));
    assert!(fails(&["ledger", "--compute-efficiency", "1.5"]).contains("invalid `--compute-efficiency`: 1.5"));
    assert!(fails(&["ledger", "--phase", "train"]).contains("unknown phase `train`; accepted: decode, prefill"));
    assert!(fails(&["ledger", "--gpu-file", "/nonexistent.toml"]).contains("cannot read GPU file"));
}

#[test]
fn moe_reproduces_the_seed_union_table() {
    // The reference calculator: 8 experts top-2 → 2.0, 5.5, 7.2, 7.9 at B = 1, 4, 8, 16; 128 top-8 → 8, 51.6, 111.8, 125.9.
    for (args, expected) in [
        (["--experts", "8", "--top-k", "2", "--batch", "1,4,8,16"], [2.0, 5.5, 7.2, 7.9]),
        (["--experts", "128", "--top-k", "8", "--batch", "1,8,32,64"], [8.0, 51.6, 111.8, 125.9]),
    ] {
        let mut a = vec!["moe", "--format", "json"];
        a.extend(args);
        let v = json(&a);
        let got: Vec<f64> = v["points"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| (p["experts_touched"].as_f64().unwrap() * 10.0).round() / 10.0)
            .collect();
        assert_eq!(got, expected);
        assert!(v["points"][0]["batch"].is_u64());
    }
    // "each expert sees only about B x k / E tokens": 0.25 at batch 1 (k = 2, E = 8) beside the
    // tokens per touched expert (1.00); the table shows both.
    let v = json(&["moe", "--format", "json", "--experts", "8", "--top-k", "2", "--batch", "1,4,8,16"]);
    let all: Vec<f64> =
        v["points"].as_array().unwrap().iter().map(|p| p["tokens_per_expert_all_experts"].as_f64().unwrap()).collect();
    assert_eq!(all, [0.25, 1.0, 2.0, 4.0]);
    assert_eq!(v["points"][0]["tokens_per_expert"], 1.0);
    let table = run(&["moe", "--experts", "8", "--top-k", "2", "--batch", "1"]).1;
    assert!(table.contains("tokens/expert   N·k/E"), "{table}");
    assert!(
        table
            .lines()
            .any(|l| l.split_whitespace().collect::<Vec<_>>()[..]
                == ["1", "1", "2.0", "25.0", "%", "1.00", "0.25", "0.25"]),
        "{table}"
    );
}

#[test]
fn moe_with_a_model_table() {
    insta::assert_snapshot!(run(&["moe", "--model", "mixtral-8x7b", "--batch", "1..16*2"]).1);
}

#[test]
fn moe_bad_inputs() {
    assert!(fails(&["moe"]).contains("unsupported model `llama-3-8b` for moe: it has no mixture-of-experts layers"));
    assert!(fails(&["moe", "--experts", "8"]).contains("missing required field `--top-k`"));
    assert!(fails(&["moe", "--experts", "8", "--top-k", "9"])
        .contains("invalid `--top-k`: 9 (from 1 to 8 (the number of experts))"));
    assert!(fails(&["moe", "--experts", "0", "--top-k", "1"]).contains("invalid `--experts`: 0"));
    assert!(fails(&["moe", "--model", "mixtral-8x7b", "--experts", "8", "--top-k", "2"])
        .contains("given together with --model"));
    assert!(fails(&["moe", "--experts", "8", "--top-k", "2", "--batch", "0..5"]).contains("invalid `--batch`: 0"));
}

#[test]
fn a_sweep_compares_gpus_and_precisions_as_series() {
    let v = json(&["sweep", "--gpu", "h100-sxm,h200", "--weights", "bf16,int4", "--batch", "1,64", "--format", "json"]);
    assert_eq!(v["variants"].as_array().unwrap().len(), 4);
    let points = v["points"].as_array().unwrap();
    assert_eq!(points.len(), 8);
    assert_eq!(v["point_count"], 8);
    // Series in order gpu × weights, each carrying its labels.
    assert_eq!((points[0]["gpu"].as_str(), points[0]["weights"].as_str()), (Some("h100-sxm"), Some("bf16")));
    assert_eq!((points[2]["gpu"].as_str(), points[2]["weights"].as_str()), (Some("h100-sxm"), Some("int4")));
    assert_eq!(points[4]["gpu"], "h200");
    // Same bytes on both GPUs; the H200's 4.8 TB/s against the H100's 3.35 TB/s shows in the
    // memory-bound batch-1 step: the ratio of step times is at most 4.8/3.35, and above 1.2 (the
    // batch-1 decode attention kernel is latency-bound: about as fast on both).
    assert_eq!(points[0]["bytes"], points[4]["bytes"]);
    let ratio = points[0]["step_time_s"].as_f64().unwrap() / points[4]["step_time_s"].as_f64().unwrap();
    assert!(ratio > 1.2 && ratio <= 4.8 / 3.35 + 1e-9, "{ratio}");
    // int4 weights read a quarter of the bf16 GEMM weight bytes (embedding rows stay 16-bit).
    assert!(points[2]["weight_bytes"].as_f64().unwrap() < points[0]["weight_bytes"].as_f64().unwrap() * 0.26);
    let (_, csv, _) = run(&["sweep", "--gpu", "h100-sxm,h200", "--batch", "1", "--format", "csv"]);
    let mut lines = csv.lines();
    assert!(lines.next().unwrap().starts_with("gpu,weights,kv,batch,ctx,step_time_s,"));
    assert!(lines.next().unwrap().starts_with("h100-sxm,bf16,bf16,1,2048,"));
    assert!(lines.next().unwrap().starts_with("h200,bf16,bf16,1,2048,"));
    assert!(fails(&["sweep", "--gpu", "h100-sxm,h200", "--plot", "x.svg"]).contains("invalid `--plot`: 2 series"));
}

#[test]
fn usage_errors_are_one_line_too() {
    assert!(fails(&["ledger", "--bogus"]).starts_with("error: unexpected argument '--bogus' found"));
    assert_eq!(fails(&["bogus"]), "error: unrecognized subcommand 'bogus' (see `llm-ledger --help`)");
    assert!(fails(&["serve", "--port", "99999"]).contains("`99999` is not a port: an integer from 0 to 65,535"));
    let (code, out, _) = run(&["--help"]);
    assert_eq!(code, 0);
    assert!(out.contains("Usage: llm-ledger"));
}

/// A user's preset file need not give `published_params`: the computed count stands in, and the
/// reports say so.
#[test]
fn a_preset_without_published_params_is_accepted_with_a_note() {
    let file = temp_file(
        "no-published.toml",
        br#"[[model]]
name = "my-llama"
display = "a Llama 3 8B of my own"
[model.config]
model_type = "llama"
hidden_size = 4096
intermediate_size = 14336
num_hidden_layers = 32
num_attention_heads = 32
num_key_value_heads = 8
vocab_size = 128256
"#,
    );
    let out = ok(&["ledger", "--preset-file", &file, "--model", "my-llama"]);
    assert!(
        out.contains("note: preset `my-llama` gives no published_params: the computed count, 8,030,261,248 parameters, stands in"),
        "{out}"
    );
    let models = json(&["models", "--preset-file", &file, "--format", "json"]);
    let mine = models["models"].as_array().unwrap().iter().find(|m| m["name"] == "my-llama").unwrap().clone();
    assert_eq!(mine["published_params"], 8_030_261_248.0);
    assert_eq!(mine["params"], 8_030_261_248u64);
}

#[test]
fn an_engine_version_reads_its_own_tables_and_says_so() {
    let sources = |v: &serde_json::Value| -> std::collections::BTreeSet<String> {
        v["rows"].as_array().unwrap().iter().filter_map(|r| r["time_source"].as_str().map(String::from)).collect()
    };
    // vLLM 0.19 on the H100: its own GEMM and attention tables, said in every table row and the
    // inputs; a version between two measured ones reads the one below.
    for (asked, tables) in [
        ("vllm@0.19", "h100_sxm/vllm 0.19.0 (AIConfigurator)"),
        ("vllm@0.21", "h100_sxm/vllm 0.19.0 (AIConfigurator; the nearest measured at or below vllm@0.21.0)"),
    ] {
        let v = json(&["ledger", "--engine", asked, "--batch", "16", "--format", "json"]);
        assert_eq!(v["inputs"]["kernel_tables"], tables, "{asked}");
        let s = sources(&v);
        assert!(
            s.contains("table:h100_sxm/vllm/0.19.0/gemm") && s.contains("table:h100_sxm/vllm/0.19.0/attention"),
            "{s:?}"
        );
        assert!(!s.iter().any(|x| x.contains("0.24.0")), "{s:?}");
    }
    // vLLM 0.22 shares 0.24's tables (its reuse.yaml): the rows name the version measured.
    let v = json(&["ledger", "--engine", "vllm@0.22", "--format", "json"]);
    assert_eq!(
        v["inputs"]["kernel_tables"],
        "h100_sxm/vllm 0.22.0 (AIConfigurator; gemm from 0.24.0, attention from 0.24.0)"
    );
    assert!(sources(&v).contains("table:h100_sxm/vllm/0.24.0/gemm"));
    // Another version's kernels are another step time.
    let step = |engine: &str| {
        json(&["ledger", "--engine", engine, "--batch", "16", "--format", "json"])["step_time_s"].as_f64().unwrap()
    };
    assert_ne!(step("vllm@0.19"), step("vllm"));
    // The footer names the families the model reads: DeepSeek-V3's MLA batched matmuls, which no
    // vLLM version up to 0.19 measured, come from the first that did.
    let v = json(&["ledger", "--model", "deepseek-v3", "--tp", "8", "--engine", "vllm@0.19", "--format", "json"]);
    let tables = v["inputs"]["kernel_tables"].as_str().unwrap().to_string();
    assert!(tables.contains("mla_bmm from 0.24.0") && !tables.contains("mhc"), "{tables}");
    assert_eq!(step("vllm@0.24"), step("vllm"));
}

/// The static plan takes the workload as requests too: `--prompt P --output O` plans the decode
/// step at the mean context of those requests' decode steps, `P + ⌊O ÷ 2⌋` tokens — the same
/// answer as `--ctx` at that context (2,000 + 300 → 2,150), its basis line still the decode step.
#[test]
fn the_static_plan_takes_prompt_and_output_lengths() {
    let by_lengths = json(&[
        "plan",
        "--model",
        "llama-3.1-70b",
        "--tpot-ms",
        "50",
        "--prompt",
        "2000",
        "--output",
        "300",
        "--format",
        "json",
    ]);
    let by_ctx = json(&["plan", "--model", "llama-3.1-70b", "--tpot-ms", "50", "--ctx", "2150", "--format", "json"]);
    assert_eq!(by_lengths, by_ctx);
    assert_eq!(by_lengths["inputs"]["ctx"], 2150);
}
