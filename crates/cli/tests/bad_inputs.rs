//! The bad-input catalogue: malformed or hostile inputs, each answered by one line on stderr that
//! names the problem, exit code 2, and no panic.

use assert_cmd::Command;
use std::path::PathBuf;

const LLAMA: &str = r#""model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
    "num_key_value_heads": 2, "intermediate_size": 128, "vocab_size": 100"#;

/// A config.json that is LLAMA with `extra` appended (later keys win in serde_json).
fn llama_with(extra: &str) -> Vec<u8> {
    format!("{{{LLAMA}, {extra}}}").into_bytes()
}

enum Input {
    /// Contents of a config.json passed with --model.
    Config(Vec<u8>),
    /// Contents of a GPU file passed with --gpu.
    GpuFile(Vec<u8>),
    /// Contents of a histogram passed with --histogram.
    Histogram(Vec<u8>),
    /// Plain arguments after `ledger`.
    Args(&'static [&'static str]),
    /// Plain arguments, the subcommand first.
    Cli(&'static [&'static str]),
}

fn cases() -> Vec<(&'static str, Input, &'static str)> {
    use Input::*;
    let deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
    let big = format!("{{\"model_type\": \"llama\", \"pad\": \"{}\"}}", "x".repeat(50 << 20));
    vec![
        ("truncated JSON", Config(br#"{"model_type": "llama", "hidden_size": 40"#.to_vec()), "malformed config.json: EOF while parsing"),
        ("empty file", Config(Vec::new()), "malformed config.json: EOF while parsing a value"),
        ("top level is a list", Config(b"[1, 2]".to_vec()), "the top level is not a JSON object"),
        ("trailing garbage", Config(llama_with("\"x\": 1} }").to_vec()), "malformed config.json: trailing characters"),
        ("NaN literal", Config(llama_with("\"rope_theta\": NaN")), "malformed config.json: expected value"),
        ("Infinity literal", Config(llama_with("\"hidden_size\": Infinity")), "malformed config.json: expected value"),
        ("hidden_size as string", Config(llama_with("\"hidden_size\": \"4096\"")), "invalid `hidden_size`: \"4096\" (an integer in 1..=16777216)"),
        ("hidden_size fractional", Config(llama_with("\"hidden_size\": 64.5")), "invalid `hidden_size`: 64.5"),
        ("hidden_size zero", Config(llama_with("\"hidden_size\": 0")), "invalid `hidden_size`: 0"),
        ("layers negative", Config(llama_with("\"num_hidden_layers\": -1")), "invalid `num_hidden_layers`: -1"),
        ("layers absurd", Config(llama_with("\"num_hidden_layers\": 1000000")), "invalid `num_hidden_layers`: 1000000 (an integer in 1..=4096)"),
        ("heads zero", Config(llama_with("\"num_attention_heads\": 0")), "invalid `num_attention_heads`: 0"),
        ("kv heads not dividing", Config(llama_with("\"num_key_value_heads\": 3")), "invalid `num_key_value_heads`: 3 (a divisor of num_attention_heads (4))"),
        ("hidden not divisible, no head_dim", Config(llama_with("\"hidden_size\": 66")), "invalid `head_dim`: absent, and hidden_size 66 is not divisible by num_attention_heads 4"),
        ("vocab 10^12", Config(llama_with("\"vocab_size\": 1000000000000")), "invalid `vocab_size`: 1000000000000 (an integer in 1..=16777216)"),
        ("vocab 1e300 float", Config(llama_with("\"vocab_size\": 1e300")), "invalid `vocab_size`: 1e+300"),
        ("intermediate huge u64", Config(llama_with("\"intermediate_size\": 18446744073709551615")), "invalid `intermediate_size`: 18446744073709551615"),
        ("bool as number", Config(llama_with("\"tie_word_embeddings\": 1")), "invalid `tie_word_embeddings`: 1 (true or false)"),
        ("unknown activation", Config(llama_with("\"hidden_act\": \"swoosh\"")), "invalid `hidden_act`: \"swoosh\""),
        ("unknown family", Config(br#"{"model_type": "bert", "hidden_size": 768}"#.to_vec()), "unknown model_type `bert`; accepted: deepseek_v2"),
        ("no model_type, unknown architecture", Config(br#"{"architectures": ["BertModel"], "hidden_size": 768}"#.to_vec()), "missing required field `model_type`"),
        ("missing vocab", Config(br#"{"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4, "intermediate_size": 8}"#.to_vec()), "missing required field `vocab_size` for model_type llama"),
        ("layer_types wrong length", Config(llama_with("\"layer_types\": [\"full_attention\"]")), "invalid `layer_types`: 1 entries (one entry per layer (2))"),
        ("layer_types unknown entry", Config(llama_with("\"layer_types\": [\"full_attention\", \"chunked\"]")), "invalid `layer_types`: \"chunked\""),
        ("top_k above experts", Config(br#"{"model_type": "mixtral", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4, "intermediate_size": 8, "vocab_size": 10, "num_local_experts": 4, "num_experts_per_tok": 5}"#.to_vec()), "invalid `num_experts_per_tok`: 5 (at most the number of experts (4))"),
        ("bad quantization bits", Config(llama_with("\"quantization_config\": {\"quant_method\": \"gptq\", \"bits\": 3}")), "invalid `quantization_config.bits`: 3 (4 or 8)"),
        ("unknown quant method", Config(llama_with("\"quantization_config\": {\"quant_method\": \"hqq\"}")), "unsupported quantization_config.quant_method `hqq`"),
        ("text_config not an object", Config(llama_with("\"text_config\": 5")), "invalid `text_config`: a number (an object)"),
        ("deeply nested JSON", Config(deep.into_bytes()), "malformed config.json: recursion limit exceeded"),
        ("50 MB file", Config(big.into_bytes()), "is larger than the 4 MiB limit"),
        ("non-UTF-8 bytes", Config(vec![b'{', 0xC3, 0x28, b'}']), "is not UTF-8 text"),
        ("GPU file missing field", GpuFile(b"[[gpu]]\nname = \"x\"\n".to_vec()), "malformed GPU file: missing field `sm_count`"),
        ("GPU file NaN bandwidth", GpuFile(b"[[gpu]]\nname = \"x\"\nsm_count = 1\nmemory_bytes = 1e9\nmemory_bandwidth_bytes_per_s = nan\nl2_bytes = 1\nonchip = \"sm90\"\n[gpu.peak_flops_per_s]\nvector = 1\nbf16 = 1\nfp16 = 1\n".to_vec()), "invalid `x.memory_bandwidth_bytes_per_s`: NaN"),
        ("GPU file bad name", GpuFile(b"[[gpu]]\nname = \"../etc\"\nsm_count = 1\nmemory_bytes = 1e9\nmemory_bandwidth_bytes_per_s = 1\nl2_bytes = 1\nonchip = \"sm90\"\n[gpu.peak_flops_per_s]\nvector = 1\nbf16 = 1\nfp16 = 1\n".to_vec()), "invalid `name`: \"../etc\""),
        ("histogram negative count", Histogram(b"context,count\n1024,-3\n".to_vec()), "invalid `histogram line 2`: \"-3\""),
        ("histogram empty", Histogram(b"context,count\n".to_vec()), "invalid `contexts`: an empty list (at least one sequence)"),
        ("histogram one column", Histogram(b"1024\n".to_vec()), "two columns: context,count"),
        ("batch negative", Args(&["--batch", "-1"]), "invalid `--batch`: \"-1\" (a non-negative integer)"),
        ("batch zero", Args(&["--batch", "0"]), "invalid `--batch`: 0 (an integer in 1..=1073741824)"),
        ("batch absurd", Args(&["--batch", "99999999999"]), "invalid `--batch`: 99999999999"),
        ("ctx NaN", Args(&["--ctx", "NaN"]), "invalid `--ctx`: \"NaN\""),
        ("efficiency Infinity", Args(&["--bandwidth-efficiency", "inf"]), "invalid `--bandwidth-efficiency`: \"inf\" (a finite number)"),
        ("unknown GPU", Args(&["--gpu", "tpu-v9"]), "unknown GPU `tpu-v9`; accepted:"),
        ("unknown precision", Args(&["--kv", "fp6"]), "unknown precision for `--kv` `fp6`; accepted:"),
        ("int4 activations", Args(&["--activations", "int4"]), "unknown activation precision `int4`; accepted: fp32, bf16, fp16, fp8, int8"),
        ("contexts with batch", Args(&["--contexts", "10x2", "--batch", "4"]), "invalid `--contexts`: given together with batch/ctx"),
        ("contexts garbage", Args(&["--contexts", "10y2"]), "invalid `--contexts`: \"10y2\""),
        ("zipf negative", Args(&["--zipf", "-1"]), "invalid `--zipf`: -1"),
        ("prefill empty prompt", Args(&["--phase", "prefill", "--ctx", "0"]), "invalid `--ctx`: 0 (a prompt of at least 1 token in prefill)"),
        ("issue 11: a flag error names the flag as typed", Cli(&["cost", "--tpot-ms", "-3"]), "invalid `--tpot-ms`: -3 (a number in (0, 3600000])"),
        ("issue 11: two GPUs outside sweep", Args(&["--gpu", "h100-sxm,h200"]), "invalid `--gpu`: \"h100-sxm,h200\" (one value for `ledger`; `llm-ledger sweep` compares several as series)"),
        ("issue 11: cost takes no --ctx", Cli(&["cost", "--ctx", "4096"]), "unexpected argument '--ctx' found"),
        ("issue 11: kv takes no --tp", Cli(&["kv", "--tp", "2"]), "unexpected argument '--tp' found"),
        ("issue 11: reserve without a unit", Cli(&["kv", "--reserve", "4"]), "invalid `--reserve`: \"4\" (a size needs a unit, e.g. 4GB or 4GiB;"),
        ("issue 11: reserve in plain bytes", Cli(&["cost", "--reserve", "2e9"]), "(a size needs a unit, e.g. 2e9GB"),
        ("issue 11: reserve in parsecs", Cli(&["sweep", "--reserve", "3pc"]), "(a size with a unit: B, kB, MB, GB, TB, KiB, MiB, GiB, TiB)"),
    ]
}

fn temp(name: &str, bytes: &[u8]) -> String {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("bad-inputs");
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    p.to_string_lossy().into_owned()
}

#[test]
fn every_bad_input_gets_one_clear_line_and_exit_code_2() {
    let cases = cases();
    assert!(cases.len() >= 30);
    let mut failures = Vec::new();
    for (i, (name, input, expected)) in cases.into_iter().enumerate() {
        let mut cmd = Command::cargo_bin("llm-ledger").unwrap();
        if !matches!(input, Input::Cli(_)) {
            cmd.arg("ledger");
        }
        match &input {
            Input::Config(b) => cmd.args(["--model", &temp(&format!("case{i}.json"), b)]),
            Input::GpuFile(b) => cmd.args(["--gpu", &temp(&format!("case{i}.toml"), b)]),
            Input::Histogram(b) => cmd.args(["--histogram", &temp(&format!("case{i}.csv"), b)]),
            Input::Args(a) | Input::Cli(a) => cmd.args(*a),
        };
        let out = cmd.timeout(std::time::Duration::from_secs(60)).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        let ok = out.status.code() == Some(2)
            && out.stdout.is_empty()
            && err.lines().count() == 1
            && err.starts_with("error: ")
            && err.contains(expected)
            && !err.contains("panicked");
        if !ok {
            failures.push(format!("{name}: code {:?}, stderr {err:?}, expected {expected:?}", out.status.code()));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
