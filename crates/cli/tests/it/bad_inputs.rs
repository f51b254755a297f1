//! The bad-input catalogue: malformed or hostile inputs, each answered by one line on stderr that
//! names the problem, exit code 2, and no panic.

use crate::harness::temp_file as temp;
use std::path::PathBuf;

const LLAMA: &str = r#""model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
    "num_key_value_heads": 2, "intermediate_size": 128, "vocab_size": 100"#;

/// A config.json that is LLAMA with `extra` appended (later keys win in serde_json).
fn llama_with(extra: &str) -> Vec<u8> {
    format!("{{{LLAMA}, {extra}}}").into_bytes()
}

const DEEPSEEK: &str = r#""model_type": "deepseek_v3", "hidden_size": 64, "num_hidden_layers": 2,
    "num_attention_heads": 4, "intermediate_size": 128, "vocab_size": 100, "q_lora_rank": 32, "kv_lora_rank": 16,
    "qk_nope_head_dim": 8, "qk_rope_head_dim": 4, "v_head_dim": 8, "n_routed_experts": 8, "num_experts_per_tok": 2,
    "moe_intermediate_size": 32, "n_shared_experts": 1, "first_k_dense_replace": 1"#;

/// A DeepSeek config.json with `extra` appended.
fn deepseek_with(extra: &str) -> Vec<u8> {
    format!("{{{DEEPSEEK}, {extra}}}").into_bytes()
}

/// A valid one-GPU file with `key = value` set (keys before the peaks table; `peak.*` inside it).
fn gpu_with(key: &str, value: &str) -> Vec<u8> {
    let mut fields = [
        ("name", "\"x\"".to_string()),
        ("sm_count", "10".into()),
        ("memory_bytes", "80e9".into()),
        ("memory_bandwidth_bytes_per_s", "1e12".into()),
        ("l2_bytes", "4e6".into()),
        ("onchip", "\"sm90\"".into()),
        ("usd_per_gpu_hour", "2".into()),
    ];
    let mut peaks = [("vector", "10e12".to_string()), ("bf16", "100e12".into()), ("fp16", "100e12".into())];
    match key.strip_prefix("peak.") {
        Some(k) => peaks.iter_mut().filter(|(n, _)| *n == k).for_each(|p| p.1 = value.into()),
        None => fields.iter_mut().filter(|(n, _)| *n == key).for_each(|f| f.1 = value.into()),
    }
    let mut t = String::from("[[gpu]]\n");
    fields.iter().for_each(|(k, v)| t.push_str(&format!("{k} = {v}\n")));
    t.push_str("[gpu.peak_flops_per_s]\n");
    peaks.iter().for_each(|(k, v)| t.push_str(&format!("{k} = {v}\n")));
    t.into_bytes()
}

fn cmd(args: &[&str]) -> Input {
    Input::Cmd(args.iter().map(|s| s.to_string()).collect())
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
    /// A whole command line (subcommand first).
    Cmd(Vec<String>),
    /// Plain arguments, the subcommand first.
    Cli(&'static [&'static str]),
    /// Contents of a GGUF file passed with --model.
    Gguf(Vec<u8>),
    /// A model folder: LLAMA's config.json and a model.safetensors of these bytes.
    Safetensors(Vec<u8>),
}

/// A GGUF file of the tiny Q4_K_M model with `edit` applied to its bytes.
fn gguf_with(edit: impl Fn(&mut Vec<u8>)) -> Vec<u8> {
    let mut b = crate::checkpoint::q4_k_m(true);
    edit(&mut b);
    b
}

/// The byte offset of the first occurrence of `needle`.
fn find(hay: &[u8], needle: &[u8]) -> usize {
    hay.windows(needle.len()).position(|w| w == needle).unwrap()
}

/// A safetensors header (with its length prefix) of this JSON text, and `data` zero bytes.
fn st(json: &str, data: usize) -> Vec<u8> {
    let mut b = (json.len() as u64).to_le_bytes().to_vec();
    b.extend(json.as_bytes());
    b.resize(b.len() + data, 0);
    b
}

/// Hub ids, revisions, safetensors and GGUF headers.
fn checkpoint_cases() -> Vec<(&'static str, Input, &'static str)> {
    use Input::*;
    let w = br#""lm_head.weight": {"dtype": "BF16", "shape": [100, 64], "data_offsets": [0, 12800]}"#;
    let w = std::str::from_utf8(w).unwrap();
    vec![
        (
            "repo id with ..",
            Args(&["--model", "org/.."]),
            "invalid `--model`: \"org/..\" (`..` or `--` inside a segment",
        ),
        (
            "repo id with a space",
            Args(&["--model", "org/my model"]),
            "invalid `--model`: \"org/my model\" (a character outside [A-Za-z0-9._-]",
        ),
        (
            "repo id ending in a dash",
            Args(&["--model", "org/x-"]),
            "invalid `--model`: \"org/x-\" (a segment starting or ending",
        ),
        (
            "revision path trick",
            Args(&["--model", "org/name", "--revision", "../../etc/passwd"]),
            "invalid `--revision`: \"../../etc/passwd\"",
        ),
        (
            "revision without a repo id",
            Args(&["--revision", "main"]),
            "invalid `--revision`: given without a Hub repo id",
        ),
        (
            "repo id not cached, offline",
            Cmd(vec!["ledger".into(), "--model".into(), "nobody-here/none".into()]),
            "HF_HUB_OFFLINE forbids downloading it",
        ),
        ("safetensors shorter than its length", Safetensors(vec![1, 2, 3]), "invalid `header length`: 3 bytes"),
        (
            "safetensors header past the file",
            Safetensors(st("{}", 0)[..9].to_vec()),
            "invalid `header length`: 2 (at most the file's 1 bytes after the 8-byte length)",
        ),
        (
            "safetensors header of 2^63",
            Safetensors([&(1u64 << 63).to_le_bytes()[..], b"{}"].concat()),
            "invalid `header length`: 9223372036854775808 (at most 100000000 bytes)",
        ),
        ("safetensors header not JSON", Safetensors(st("{\"a\": ", 0)), "malformed safetensors header"),
        (
            "safetensors data missing",
            Safetensors(st(&format!("{{{w}}}"), 100)),
            "invalid `lm_head.weight.data_offsets`: [0, 12800] (begin ≤ end ≤ the 100 data bytes after the header)",
        ),
        (
            "safetensors unknown dtype",
            Safetensors(st(r#"{"x.weight": {"dtype": "Q4_K", "shape": [2], "data_offsets": [0, 2]}}"#, 2)),
            "unknown dtype for `x.weight.dtype` `Q4_K`; accepted: BOOL, U8",
        ),
        (
            "safetensors overflowing shape",
            Safetensors(st(
                r#"{"x.weight": {"dtype": "F32", "shape": [4294967296, 4294967296, 4294967296], "data_offsets": [0, 0]}}"#,
                0,
            )),
            "invalid `x.weight.shape`: [4294967296, 4294967296, 4294967296] (at most 281474976710656 elements)",
        ),
        (
            "safetensors negative shape",
            Safetensors(st(r#"{"x.weight": {"dtype": "F32", "shape": [-1], "data_offsets": [0, 0]}}"#, 0)),
            "invalid `x.weight.shape`: [-1] (a list of at most 8 non-negative integers)",
        ),
        (
            "safetensors span disagrees",
            Safetensors(st(r#"{"x.weight": {"dtype": "F32", "shape": [2], "data_offsets": [0, 4]}}"#, 4)),
            "invalid `x.weight.data_offsets`: [0, 4] (a span of 8 bytes for F32 [2])",
        ),
        ("gguf bad magic", Gguf(gguf_with(|b| b[..4].copy_from_slice(b"GGML"))), "invalid `magic`"),
        ("gguf version 1", Gguf(gguf_with(|b| b[4] = 1)), "invalid `version`: 1 (2 or 3)"),
        (
            "gguf absurd tensor count",
            Gguf(gguf_with(|b| b[8..16].copy_from_slice(&u64::MAX.to_le_bytes()))),
            "invalid `tensor_count`: 18446744073709551615 (at most 1048576)",
        ),
        ("gguf truncated header", Gguf(gguf_with(|b| b.truncate(100))), "truncated header"),
        (
            "gguf key longer than any key",
            Gguf(gguf_with(|b| b[24..32].copy_from_slice(&(1u64 << 62).to_le_bytes()))),
            "invalid `metadata key`: 4611686018427387904 bytes (at most 65535 bytes)",
        ),
        (
            "gguf unknown ggml type",
            Gguf(gguf_with(|b| {
                let i = find(b, b"token_embd.weight") + 17 + 4 + 16;
                b[i..i + 4].copy_from_slice(&99u32.to_le_bytes());
            })),
            "unknown ggml type for `token_embd.weight.type` `99`",
        ),
        (
            "gguf overflowing dims",
            Gguf(gguf_with(|b| {
                let i = find(b, b"token_embd.weight") + 17 + 4 + 8;
                b[i..i + 8].copy_from_slice(&u64::MAX.to_le_bytes());
            })),
            "invalid `token_embd.weight.dims`: [256, 18446744073709551615]",
        ),
        (
            "gguf unknown architecture",
            Gguf(gguf_with(|b| {
                let i = find(b, b"llama");
                b[i..i + 5].copy_from_slice(b"bert_");
            })),
            "unknown GGUF architecture for `general.architecture` `bert_`; accepted: llama, mistral, qwen2, qwen3",
        ),
    ]
}

fn cases() -> Vec<(&'static str, Input, &'static str)> {
    use Input::*;
    let deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
    let big = format!("{{\"model_type\": \"llama\", \"pad\": \"{}\"}}", "x".repeat(50 << 20));
    let words = |s: &str| s.split(' ').map(str::to_string).collect::<Vec<_>>();
    // 200 GPUs × 11 weight formats × 10⁸ batches: every axis within the cap, the grid far past it.
    let many_series = words(&format!(
        "sweep --gpu {} --weights bf16,fp16,fp8,int8,int4,int4-g128,mxfp4,nvfp4,fp8-b128,bf16,fp8 --batch 1..100000000",
        vec!["h100-sxm"; 200].join(",")
    ));
    vec![
        ("truncated JSON", Config(br#"{"model_type": "llama", "hidden_size": 40"#.to_vec()), "malformed config.json: EOF while parsing"),
        ("empty file", Config(Vec::new()), "malformed config.json: EOF while parsing a value"),
        ("top level is a list", Config(b"[1, 2]".to_vec()), "the top level is not a JSON object"),
        ("trailing garbage", Config(llama_with("\"x\": 1} }").to_vec()), "malformed config.json: trailing characters"),
        // Python's json writes NaN and Infinity: a key the model reads with one is refused by name.
        ("NaN literal", Config(llama_with("\"num_attention_heads\": NaN")), "invalid `num_attention_heads`: \"NaN\" (an integer from 1 to"),
        ("Infinity literal", Config(llama_with("\"hidden_size\": Infinity")), "invalid `hidden_size`: \"Infinity\" (an integer from 1 to"),
        ("hidden_size as string", Config(llama_with("\"hidden_size\": \"4096\"")), "invalid `hidden_size`: \"4096\" (an integer from 1 to 16,777,216)"),
        ("hidden_size fractional", Config(llama_with("\"hidden_size\": 64.5")), "invalid `hidden_size`: 64.5"),
        ("hidden_size zero", Config(llama_with("\"hidden_size\": 0")), "invalid `hidden_size`: 0"),
        ("layers negative", Config(llama_with("\"num_hidden_layers\": -1")), "invalid `num_hidden_layers`: -1"),
        ("layers absurd", Config(llama_with("\"num_hidden_layers\": 1000000")), "invalid `num_hidden_layers`: 1000000 (an integer from 1 to 4,096)"),
        ("heads zero", Config(llama_with("\"num_attention_heads\": 0")), "invalid `num_attention_heads`: 0"),
        ("kv heads not dividing", Config(llama_with("\"num_key_value_heads\": 3")), "invalid `num_key_value_heads`: 3 (a divisor of num_attention_heads (4))"),
        ("hidden not divisible, no head_dim", Config(llama_with("\"hidden_size\": 66")), "invalid `head_dim`: absent, and hidden_size 66 is not divisible by num_attention_heads 4"),
        ("vocab 10^12", Config(llama_with("\"vocab_size\": 1000000000000")), "invalid `vocab_size`: 1000000000000 (an integer from 1 to 16,777,216)"),
        ("vocab 1e300 float", Config(llama_with("\"vocab_size\": 1e300")), "invalid `vocab_size`: 1e+300"),
        ("intermediate huge u64", Config(llama_with("\"intermediate_size\": 18446744073709551615")), "invalid `intermediate_size`: 18446744073709551615"),
        ("bool as number", Config(llama_with("\"tie_word_embeddings\": 1")), "invalid `tie_word_embeddings`: 1 (true or false)"),
        ("unknown activation", Config(llama_with("\"hidden_act\": \"swoosh\"")), "invalid `hidden_act`: \"swoosh\""),
        ("unknown family", Config(br#"{"model_type": "bert", "hidden_size": 768}"#.to_vec()), "invalid `model_type`: \"bert\" (a family — deepseek_v2, deepseek_v3"),
        ("no model_type, unknown architecture", Config(br#"{"architectures": ["BertModel"], "hidden_size": 768}"#.to_vec()), "missing required field `model_type`"),
        ("missing vocab", Config(br#"{"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4, "intermediate_size": 8}"#.to_vec()), "missing required field `vocab_size` for model_type llama"),
        ("layer_types wrong length", Config(llama_with("\"layer_types\": [\"full_attention\"]")), "invalid `layer_types`: 1 entries (one entry per layer (2))"),
        ("layer_types unknown entry", Config(llama_with("\"layer_types\": [\"full_attention\", \"chunked\"]")), "invalid `layer_types`: \"chunked\""),
        ("linear layer in a family without one", Config(llama_with("\"layer_types\": [\"full_attention\", \"linear_attention\"]")), "invalid `layer_types`: \"linear_attention\" (the attention kinds of model_type llama (it has no recurrent mixer))"),
        ("hybrid without its linear keys", Config(br#"{"model_type": "qwen3_5", "hidden_size": 64, "num_hidden_layers": 4, "num_attention_heads": 4, "num_key_value_heads": 2, "intermediate_size": 8, "vocab_size": 10}"#.to_vec()), "missing required field `linear_num_key_heads` for model_type qwen3_5"),
        ("unknown state dtype", Config(br#"{"model_type": "qwen3_5", "hidden_size": 64, "num_hidden_layers": 4, "num_attention_heads": 4, "num_key_value_heads": 2, "intermediate_size": 8, "vocab_size": 10, "linear_num_key_heads": 2, "linear_num_value_heads": 4, "linear_key_head_dim": 8, "linear_value_head_dim": 8, "mamba_ssm_dtype": "float8"}"#.to_vec()), "invalid `mamba_ssm_dtype`: \"float8\" (float32, bfloat16 or float16)"),
        ("hybrid pattern letter", Config(br#"{"model_type": "nemotron_h", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4, "vocab_size": 10, "hybrid_override_pattern": "MX"}"#.to_vec()), "invalid `hybrid_override_pattern`: \"MX\" (letter 'X') (letters M (Mamba-2), * (attention), - (MLP), E (MoE))"),
        ("sparse top-k above the context", Config(format!("{{{DEEPSEEK}, \"model_type\": \"deepseek_v32\", \"max_position_embeddings\": 4096, \"index_n_heads\": 4, \"index_head_dim\": 8, \"index_topk\": 8192}}").into_bytes()), "invalid `index_topk`: 8192 (positions a query reads, at most the context max_position_embeddings (4096))"),
        ("cuda graph size 0", cmd(&["simulate", "--requests", "10", "--cuda-graphs", "0"]), "invalid `--cuda-graphs`: a size of 0 (batch sizes of at least 1)"),
        ("cuda graph sizes repeated", cmd(&["simulate", "--requests", "10", "--cuda-graphs", "1,1,1"]), "invalid `--cuda-graphs`: 1 then 1 (batch sizes in strictly ascending order, each once (`1,2,4,8`))"),
        ("cuda graph sizes descending", cmd(&["simulate", "--requests", "10", "--cuda-graphs", "8,4,2,1"]), "invalid `--cuda-graphs`: 8 then 4 (batch sizes in strictly ascending order, each once (`1,2,4,8`))"),
        ("a KV block larger than the cache", cmd(&["simulate", "--requests", "10", "--block", "16777216"]), "invalid `--block`: 16777216 (tokens per KV block, at most the 466,156 tokens the KV cache holds on the h100-sxm (engines use 16 to 256))"),
        ("a step budget past its range", cmd(&["simulate", "--requests", "10", "--max-steps", "1000000000000000000"]), "invalid `--max-steps`: 1000000000000000000 (engine steps over every run, from 1 to 10,000,000,000)"),
        ("a plan over a range of 100,000 batches", cmd(&["plan", "--tpot-ms", "50", "--batch", "1..100000"]), "invalid `--batch`: 100,000 candidate batches (at most 65,536 step evaluations in one search: these batches take 582,716 across the 94 layouts that fit in 64 GPUs; ask for at most 697 batches (a list or a range), or fewer GPUs)"),
        ("attend of zero tokens", Args(&["--attend", "0"]), "invalid `--attend`: 0 (from 1 to 1,099,511,627,776)"),
        ("attend that is not a number", Args(&["--attend", "2k"]), "invalid `--attend`: \"2k\" (a non-negative integer)"),
        ("attend past a window already narrower", Args(&["--model", "mistral-7b", "--attend", "8192"]), "invalid `--attend`: 8192 (fewer cached tokens than mistral-7b's attention layers read now (32 × sliding-window attention (window 4,096) + MLP): this bound changes nothing)"),
        ("top_k above experts", Config(br#"{"model_type": "mixtral", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4, "intermediate_size": 8, "vocab_size": 10, "num_local_experts": 4, "num_experts_per_tok": 5}"#.to_vec()), "invalid `num_experts_per_tok`: 5 (at most the number of experts (4))"),
        ("bad quantization bits", Config(llama_with("\"quantization_config\": {\"quant_method\": \"gptq\", \"bits\": 3}")), "invalid `quantization_config.bits`: 3 (4 or 8)"),
        ("unknown quant method", Config(llama_with("\"quantization_config\": {\"quant_method\": \"hqq\"}")), "unsupported quantization_config.quant_method `hqq`"),
        ("gptq bits 5", Config(llama_with(r#""quantization_config": {"quant_method": "gptq", "bits": 5}"#)), "invalid `quantization_config.bits`: 5 (4 or 8)"),
        ("gptq group_size 0", Config(llama_with(r#""quantization_config": {"quant_method": "gptq", "bits": 4, "group_size": 0}"#)), "invalid `quantization_config.group_size`: 0 (a power of two from 16 to 4,096, or -1 for one scale per output channel)"),
        ("gptq group_size 7", Config(llama_with(r#""quantization_config": {"quant_method": "gptq", "bits": 4, "group_size": 7}"#)), "invalid `quantization_config.group_size`: 7 (a power of two from 16 to 4,096, or -1 for one scale per output channel)"),
        ("gptq group_size -2", Config(llama_with(r#""quantization_config": {"quant_method": "gptq", "bits": 4, "group_size": -2}"#)), "invalid `quantization_config.group_size`: -2 (a power of two from 16 to 4,096, or -1 for one scale per output channel)"),
        ("gptq bits as string", Config(llama_with(r#""quantization_config": {"quant_method": "gptq", "bits": "4"}"#)), "invalid `quantization_config.bits`: \"4\" (an integer)"),
        ("awq bits 8", Config(llama_with(r#""quantization_config": {"quant_method": "awq", "bits": 8}"#)), "invalid `quantization_config.bits`: 8 (4: AWQ stores 4-bit weights)"),
        ("fp8 block [0, 128]", Config(llama_with(r#""quantization_config": {"quant_method": "fp8", "weight_block_size": [0, 128]}"#)), "invalid `quantization_config.weight_block_size`: [0,128] (two equal powers of two from 16 to 4,096, such as [128, 128])"),
        ("fp8 block not a list", Config(llama_with(r#""quantization_config": {"quant_method": "fp8", "weight_block_size": 128}"#)), "invalid `quantization_config.weight_block_size`: 128 (two equal powers of two from 16 to 4,096, such as [128, 128])"),
        ("fp8 unknown fmt", Config(llama_with(r#""quantization_config": {"quant_method": "fp8", "fmt": "e3m4"}"#)), "invalid `quantization_config.fmt`: \"e3m4\" (one of e4m3, e5m2, float8_e4m3fn, float8_e5m2)"),
        ("fp8 unknown activation_scheme", Config(llama_with(r#""quantization_config": {"quant_method": "fp8", "activation_scheme": "lazy"}"#)), "invalid `quantization_config.activation_scheme`: \"lazy\" (one of dynamic, static)"),
        ("skip list not a list", Config(llama_with(r#""quantization_config": {"quant_method": "fp8", "modules_to_not_convert": "lm_head"}"#)), "invalid `quantization_config.modules_to_not_convert`: \"lm_head\" (a list of module names)"),
        ("mxfp4 bits 8", Config(llama_with(r#""quantization_config": {"quant_method": "mxfp4", "bits": 8}"#)), "invalid `quantization_config.bits`: 8 (4: MXFP4 stores 4-bit e2m1 values)"),
        ("mxfp4 group_size 16", Config(llama_with(r#""quantization_config": {"quant_method": "mxfp4", "group_size": 16}"#)), "invalid `quantization_config.group_size`: 16 (32: MXFP4 shares one scale per 32 values)"),
        ("bitsandbytes neither 4 nor 8 bit", Config(llama_with(r#""quantization_config": {"quant_method": "bitsandbytes"}"#)), "invalid `quantization_config.load_in_4bit`: false with load_in_8bit false (exactly one of load_in_4bit and load_in_8bit true)"),
        ("compressed-tensors 2-bit", Config(llama_with(r#""quantization_config": {"quant_method": "compressed-tensors", "config_groups": {"group_0": {"weights": {"num_bits": 2}}}}"#)), "invalid `quantization_config.config_groups.group_0.weights.num_bits`: 2 (4 or 8)"),
        ("compressed-tensors mixed groups", Config(llama_with(r#""quantization_config": {"quant_method": "compressed-tensors", "config_groups": {"a": {"weights": {"num_bits": 8, "type": "float"}}, "b": {"weights": {"num_bits": 4}}}}"#)), "invalid `quantization_config.config_groups`: groups without targets (groups whose `targets` name this model's modules (`Linear`, `re:` patterns or module names))"),
        ("quant_method not a string", Config(llama_with(r#""quantization_config": {"quant_method": 4}"#)), "invalid `quantization_config.quant_method`: 4 (a method name: fp8, fbgemm_fp8, mxfp4, gptq, awq, compressed-tensors, bitsandbytes, modelopt)"),
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
        ("batch zero", Args(&["--batch", "0"]), "invalid `--batch`: 0 (an integer from 1 to 1,073,741,824)"),
        ("batch absurd", Args(&["--batch", "99999999999"]), "invalid `--batch`: 99999999999"),
        ("ctx NaN", Args(&["--ctx", "NaN"]), "invalid `--ctx`: \"NaN\""),
        ("efficiency Infinity", Args(&["--bandwidth-efficiency", "inf"]), "invalid `--bandwidth-efficiency`: \"inf\" (a finite number)"),
        ("unknown GPU", Args(&["--gpu", "tpu-v9"]), "unknown GPU `tpu-v9`; none of the 23 accepted names is close; `llm-ledger gpus` lists them"),
        ("unknown precision", Args(&["--kv", "fp6"]), "unknown precision for `--kv` `fp6`; did you mean `fp16`, `fp8` or `fp4`? accepted:"),
        ("int4 activations", Args(&["--activations", "int4"]), "unknown activation precision `int4`; did you mean `int8`? accepted: fp32, bf16, fp16, fp8, int8"),
        ("contexts with batch", Args(&["--contexts", "10x2", "--batch", "4"]), "invalid `--contexts`: given together with batch/ctx"),
        ("contexts garbage", Args(&["--contexts", "10y2"]), "invalid `--contexts`: \"10y2\""),
        ("zipf negative", Args(&["--zipf", "-1"]), "invalid `--zipf`: -1"),
        ("prefill empty prompt", Args(&["--phase", "prefill", "--ctx", "0"]), "invalid `--ctx`: 0 (a prompt of at least 1 token in prefill)"),
        ("sweep series past the point cap", Cmd(many_series), "invalid `gpu × weights × kv × batch × ctx`: 200 × 11 × 1 × 100000000 × 1 = 220000000000 points (at most 100000000 points in all)"),
        ("sweep grid past the point cap", Cmd(words("sweep --batch 1..100000 --ctx 0..10000")), "invalid `batch × ctx`: 100000 × 10001 = 1000100000 points (at most 100000000 points in all)"),
        // Every float input has a range (limits::RANGES); these once printed NaN or inf.
        ("compute efficiency 5e-324", Args(&["--compute-efficiency", "5e-324"]), "invalid `--compute-efficiency`: 5e-324 (a number in [0.01, 1])"),
        ("bandwidth efficiency 0.001", Args(&["--bandwidth-efficiency", "0.001"]), "invalid `--bandwidth-efficiency`: 0.001 (a number in [0.01, 1])"),
        ("link efficiency 1e-300", Args(&["--tp", "2", "--link-efficiency", "1e-300"]), "invalid `--link-efficiency`: 1e-300 (a number in [0.01, 1])"),
        ("zipf 1e308", Args(&["--model", "mixtral-8x7b", "--zipf", "1e308"]), "invalid `--zipf`: 1e308 (a number in [0, 10])"),
        // The clock's inputs name their accepted values.
        ("unknown engine", Args(&["--engine", "tgi"]), "unknown engine for `--engine` `tgi`; accepted: trtllm, trtllm@0.6, vllm, vllm@0.6, sglang, gpt-fast, eager"),
        ("engine version below the tables", Args(&["--engine", "vllm@0.10"]), "invalid `--engine`: vllm@0.10.0 (a version of vllm measured on h100_sxm (0.14.0, 0.19.0, 0.22.0, 0.24.0) or a later one)"),
        ("a version of an engine without tables", Args(&["--engine", "eager@2.1"]), "invalid `--engine`: \"eager@2.1\" (a version as major.minor[.patch] after @"),
        ("unknown time model", Args(&["--time-model", "fast"]), "unknown time model for `--time-model` `fast`; accepted: measured, roofline"),
        ("empty engine on sweep", Cli(&["sweep", "--engine", ""]), "unknown engine for `--engine` ``; accepted: trtllm"),
        ("measure step 1e-320 ms", cmd(&["measure", "--step-ms", "1e-320"]), "invalid `--step-ms`: 1e-320 (a number in [0.001, 3.6e6])"),
        ("measure 1e-300 tokens/s", cmd(&["measure", "--tokens-per-s", "1e-300"]), "invalid `--tokens-per-s`: 1e-300 (a number in [0.001, 1e15])"),
        ("cost tpot 1e-320 ms", cmd(&["cost", "--tpot-ms", "1e-320"]), "invalid `--tpot-ms`: 1e-320 (a number in [0.001, 3.6e6])"),
        ("cost price 1e308 flag", cmd(&["cost", "--usd-per-hour", "1e308"]), "invalid `--usd-per-hour`: 1e308 (a number in (0, 1e6])"),
        ("GPU file bandwidth 1e-300", GpuFile(gpu_with("memory_bandwidth_bytes_per_s", "1e-300")), "invalid `x.memory_bandwidth_bytes_per_s`: 1e-300 (a number in [1e6, 1e15])"),
        ("GPU file peak 1e-300", GpuFile(gpu_with("peak.bf16", "1e-300")), "invalid `x.peak_flops_per_s.bf16`: 1e-300 (a number in [1e6, 1e18])"),
        ("GPU file vector peak 1e300", GpuFile(gpu_with("peak.vector", "1e300")), "invalid `x.peak_flops_per_s.vector`: 1e300 (a number in [1e6, 1e18])"),
        ("GPU file memory 1e-300", GpuFile(gpu_with("memory_bytes", "1e-300")), "invalid `x.memory_bytes`: 1e-300 (a number in [1e6, 1e15])"),
        ("GPU file price 1e308", GpuFile(gpu_with("usd_per_gpu_hour", "1e308")), "invalid `x.usd_per_gpu_hour`: 1e308 (a number in (0, 1e6])"),
        ("GPU file sm_count 2^53", GpuFile(gpu_with("sm_count", "9007199254740992")), "invalid `x.sm_count`: 9007199254740992 (an integer from 1 to 100,000)"),
        // Item 3: every integer key of config.json is bounded; products are checked.
        ("shared experts 2^53", Config(deepseek_with("\"n_shared_experts\": 9007199254740992")), "invalid `n_shared_experts`: 9007199254740992 (an integer from 0 to 65,536)"),
        ("shared experts 10^12", Config(deepseek_with("\"n_shared_experts\": 1000000000000")), "invalid `n_shared_experts`: 1000000000000 (an integer from 0 to 65,536)"),
        ("first dense layers 2^53", Config(deepseek_with("\"first_k_dense_replace\": 9007199254740992")), "invalid `first_k_dense_replace`: 9007199254740992 (an integer from 0 to 4,096)"),
        ("nextn layers 2^64-1", Config(deepseek_with("\"num_nextn_predict_layers\": 18446744073709551615")), "invalid `num_nextn_predict_layers`: 18446744073709551615"),
        ("max_window_layers 10^12", Config(llama_with("\"max_window_layers\": 1000000000000")), "invalid `max_window_layers`: 1000000000000 (an integer from 0 to 4,096)"),
        ("shared experts too wide", Config(deepseek_with("\"n_shared_experts\": 65536, \"moe_intermediate_size\": 4096")), "invalid `n_shared_experts`: 65536 (at most 16777216 ÷ moe_intermediate_size (4096) = 4096)"),
        ("parameters past 2^50", Config(llama_with("\"hidden_size\": 16777216, \"num_attention_heads\": 65536, \"num_key_value_heads\": 65536, \"head_dim\": 16777216, \"num_hidden_layers\": 4096")), "invalid `model parameters`: "),
        // Item 13: echoed input is cut; extreme numbers are compact.
        // (One argument is at most 128 KiB on Linux; the 3 MB line goes through a histogram file.)
        ("100 kB --contexts value", Input::Cmd(vec!["ledger".into(), "--contexts".into(), "7".repeat(100_000) + "x"]), "…(100002 bytes)"),
        ("3 MB histogram line", Histogram(format!("1024,1\n{}x,1\n", "7".repeat(3 << 20)).into_bytes()), "invalid `histogram line 2`: \"7777"),
        ("1e308 digits as a batch", Input::Cmd(vec!["ledger".into(), "--batch".into(), format!("1{}", "0".repeat(308))]), "invalid `--batch`: \"1e308\" (a non-negative integer)"),
        ("1e308 digits as a price", cmd(&["cost", "--usd-per-hour", "100000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000"]), "invalid `--usd-per-hour`: 1e110 (a number in (0, 1e6])"),
        ("a flag error names the flag as typed", Cli(&["cost", "--tpot-ms", "-3"]), "invalid `--tpot-ms`: -3 (a number in [0.001, 3.6e6])"),
        ("two GPUs outside sweep", Args(&["--gpu", "h100-sxm,h200"]), "invalid `--gpu`: \"h100-sxm,h200\" (one value for `ledger`; `llm-ledger sweep` compares several as series)"),
        ("cost takes no --ctx", Cli(&["cost", "--ctx", "4096"]), "unexpected argument '--ctx' found"),
        ("kv takes no --tp", Cli(&["kv", "--tp", "2"]), "unexpected argument '--tp' found"),
        ("reserve without a unit", Cli(&["kv", "--reserve", "4"]), "invalid `--reserve`: \"4\" (a size needs a unit, e.g. 4GB or 4GiB;"),
        ("reserve in plain bytes", Cli(&["cost", "--reserve", "2e9"]), "(a size needs a unit, e.g. 2e9GB"),
        ("reserve in parsecs", Cli(&["sweep", "--reserve", "3pc"]), "(a size with a unit: B, kB, MB, GB, TB, KiB, MiB, GiB, TiB)"),
        // The serving simulator.
        ("a negative rate", Cli(&["simulate", "--rate", "-2"]), "invalid `--rate`: -2 (a number in [1e-300, 1e6])"),
        ("a zero rate in a list", Cli(&["simulate", "--rate", "0,4"]), "invalid `--rate`: 0 (a number in [1e-300, 1e6])"),
        ("too many rates", Cli(&["simulate", "--rate", "1..100000"]), "invalid `--rate`: 100000 rates (at most 1000)"),
        ("an unsorted trace", Cmd(vec!["simulate".into(), "--trace".into(), temp("unsorted-trace.csv", b"arrival_s,prompt_tokens,output_tokens\n1,10,5\n0.5,10,5\n")]), "invalid `--trace`: request 2 arrives at 0.5 s, before request 1 at 1 s (arrival times sorted ascending)"),
        ("an empty trace", Cmd(vec!["simulate".into(), "--trace".into(), temp("empty-trace.csv", b"arrival_s,prompt_tokens,output_tokens\n")]), "invalid `--trace`: an empty trace (at least one request)"),
        ("a trace row with two fields", Cmd(vec!["simulate".into(), "--trace".into(), temp("short-trace.csv", b"0,10\n")]), "invalid `trace`: line 1: 2 fields (3 comma-separated numbers (arrival_s,prompt_tokens,output_tokens), or 5 with prefix_id,prefix_tokens for the prefix cache, as many on every row (3 on the first))"),
        ("a request past the KV capacity", Cli(&["simulate", "--prompt", "1000000"]), "invalid `--prompt`: a request of 1000000 prompt + 256 output tokens (requests whose cache (prompt + output − 1 = 1000255 tokens) fits the KV capacity of 466144 tokens left next to the weights)"),
        ("a lognormal draw past the KV capacity", Cli(&["simulate", "--prompt", "lognormal:300000:1"]), "fits the KV capacity of 466144 tokens"),
        ("weights that leave no KV room", Cli(&["simulate", "--model", "llama-3.1-405b"]), "invalid `--model`: llama-3.1-405b (a model whose weights leave room for KV cache on the h100-sxm (none is left))"),
        ("an empty uniform range", Cli(&["simulate", "--output", "uniform:9..3"]), "invalid `--output`: uniform:9..3 (a range with min ≤ max)"),
        ("an unknown length distribution", Cli(&["simulate", "--prompt", "zipf:2"]), "invalid `--prompt`: \"zipf:2\" (a token count, uniform:MIN..MAX, lognormal:MEDIAN:SIGMA or hist:FILE.csv)"),
        ("zero sequences per step", Cli(&["simulate", "--max-seqs", "0"]), "invalid `--max-seqs`: 0 (an integer from 1 to 16,777,216)"),
        ("an absurd chunk", Cli(&["simulate", "--chunk", "99999999999"]), "invalid `--chunk`: 99999999999 (an integer from 1 to 16,777,216)"),
        ("an absurd request count", Cli(&["simulate", "--requests", "99999999999"]), "invalid `--requests`: 99999999999 (an integer from 1 to 1,000,000)"),
        ("a zero block", Cli(&["simulate", "--block", "0"]), "invalid `--block`: 0"),
        ("a full prefix cache", Cli(&["simulate", "--prefix-hit", "1"]), "invalid `--prefix-hit`: 1 (a fraction in [0, 1))"),
        ("a zero TTFT bound", Cli(&["simulate", "--ttft-ms", "0"]), "invalid `--ttft-ms`: 0 (a number in [0.001, 3.6e6])"),
        ("cv without gamma arrivals", Cli(&["simulate", "--cv", "2"]), "invalid `--cv`: given (it applies only to --arrivals gamma)"),
        ("a zero cv", Cli(&["simulate", "--arrivals", "gamma", "--cv", "0"]), "invalid `--cv`: 0 (a number in [1e-4, 100])"),
        ("a closed loop of none", Cli(&["simulate", "--arrivals", "closed", "--concurrency", "0"]), "invalid `--concurrency`: 0 (an integer from 1 to 1,000,000)"),
        ("an unknown arrival process", Cli(&["simulate", "--arrivals", "fifo"]), "unknown arrivals `fifo`; accepted: poisson, gamma, closed, trace"),
        ("an unknown schedule", Cli(&["simulate", "--schedule", "lifo"]), "unknown schedule `lifo`; accepted: prefill-first, decode-first"),
        ("pipeline stages", Cli(&["simulate", "--pp", "2"]), "invalid `--pp`: 2 (pp = 1: the simulator does not model pipeline micro-batches (use tp or ep))"),
        ("a sweep too large to run", Cli(&["simulate", "--rate", "1..100", "--requests", "1000000"]), "invalid `--requests`: 1000000 requests at each of 100 rates (at most 10000000 requests in all)"),
        ("plan --rate without a TTFT bound", Cli(&["plan", "--rate", "2", "--tpot-ms", "50"]), "invalid `--ttft-ms`: none given (a p99 bound in milliseconds with --rate)"),
        ("plan --rate without a TPOT bound", Cli(&["plan", "--rate", "2", "--ttft-ms", "500"]), "--tpot-ms"),
        ("plan at a zero rate", Cli(&["plan", "--rate", "0", "--ttft-ms", "500", "--tpot-ms", "50"]), "invalid `--rate`: 0 (a number in [1e-300, 1e6])"),
        ("plan at a negative rate", Cli(&["plan", "--rate", "-3", "--ttft-ms", "500", "--tpot-ms", "50"]), "invalid `--rate`: -3 (a number in [1e-300, 1e6])"),
        ("plan at a rate that is not a number", Cli(&["plan", "--rate", "fast", "--ttft-ms", "500", "--tpot-ms", "50"]), "invalid `--rate`"),
        ("plan with a zero TTFT bound", Cli(&["plan", "--rate", "2", "--ttft-ms", "0", "--tpot-ms", "50"]), "invalid `--ttft-ms`: 0 (a number in [0.001, 3.6e6])"),
        ("plan with a negative TPOT bound under load", Cli(&["plan", "--rate", "2", "--ttft-ms", "500", "--tpot-ms", "-1"]), "invalid `--tpot-ms`: -1"),
        ("plan with zero requests per candidate", Cli(&["plan", "--rate", "2", "--ttft-ms", "500", "--tpot-ms", "50", "--requests", "0"]), "invalid `--requests`: 0 (an integer from 1 to 1,000,000)"),
        ("plan with a TTFT bound but no rate", Cli(&["plan", "--ttft-ms", "500", "--tpot-ms", "50"]), "invalid `--ttft-ms`: given (it applies only with --rate (a plan under load))"),
        ("a static plan with both a context and a prompt", Cli(&["plan", "--tpot-ms", "50", "--ctx", "100", "--prompt", "2000"]), "invalid `--ctx`: given with --prompt or --output (one or the other)"),
        ("a static plan over a distribution of prompts", Cli(&["plan", "--tpot-ms", "50", "--prompt", "uniform:1..100"]), "invalid `--prompt`: uniform:1..100 (a number of tokens, at least 1 (a distribution needs --rate: the static plan times one context))"),
        ("a static plan with no output", Cli(&["plan", "--tpot-ms", "50", "--output", "0"]), "invalid `--output`: 0 (a number of tokens, at least 1"),
        ("plan under load with a batch", Cli(&["plan", "--rate", "2", "--ttft-ms", "500", "--tpot-ms", "50", "--batch", "8"]), "invalid `--batch`: given with --rate (--prompt and --output (the simulated lengths))"),
        ("a timeline of a sweep", Cli(&["simulate", "--rate", "1,2", "--plot-timeline", "x.svg"]), "invalid `--plot-timeline`: given with a sweep of rates (one rate)"),
        ("a disaggregated split with no prefill instance", Cli(&["simulate", "--disagg", "0:1"]), "invalid `--disagg`: 0:1 (PREFILL:DECODE instances, e.g. 1:3, each at least 1, together at most 64)"),
        ("a disaggregated split of one number", Cli(&["simulate", "--disagg", "3"]), "invalid `--disagg`: 3 (PREFILL:DECODE instances"),
        ("a disaggregated split of words", Cli(&["simulate", "--disagg", "a:b"]), "invalid `--disagg`: a:b (PREFILL:DECODE instances"),
        ("an absurd disaggregated split", Cli(&["simulate", "--disagg", "1:99999999999999999999"]), "invalid `--disagg`: 1:99999999999999999999 (PREFILL:DECODE instances"),
        ("a disaggregated split past the instance bound", Cli(&["simulate", "--disagg", "40:25"]), "together at most 64)"),
        ("an unknown KV link", Cli(&["simulate", "--disagg", "1:1", "--kv-link", "carrier-pigeon"]), "unknown KV link for `--kv-link` `carrier-pigeon`; accepted: auto, nvlink, pcie, network, ideal"),
        ("a KV link without --disagg", Cli(&["simulate", "--kv-link", "nvlink"]), "invalid `--kv-link`: given (it applies only with --disagg X:Y)"),
        ("NVLink for pools larger than its domain", Cli(&["simulate", "--disagg", "4:6", "--kv-link", "nvlink"]), "invalid `--kv-link`: nvlink (a link whose domain holds both pools: NVLink 4 (NVSwitch) reaches 8 GPUs, the deployment has 10 (use network))"),
        ("a disaggregated sweep counts both runs against the request bound", Cli(&["simulate", "--disagg", "1:1", "--requests", "1000000", "--rate", "1..6"]), "invalid `--requests`: 1000000 requests at each of 6 rates, run disaggregated and aggregated (at most 10000000 requests in all)"),
        ("a step trace of a disaggregated run", Cli(&["simulate", "--disagg", "1:1", "--trace-out", "x.csv"]), "invalid `--trace-out`: given with --disagg (a run of one instance)"),
        ("a pool's layout without --disagg", Cli(&["simulate", "--prefill-tp", "2"]), "invalid `--prefill-tp`: given (it applies only with --disagg X:Y)"),
        ("a decode pool's EP without --disagg", Cli(&["simulate", "--decode-ep", "2"]), "invalid `--decode-ep`: given (it applies only with --disagg X:Y)"),
        ("a pool's TP that divides no heads", Cli(&["simulate", "--disagg", "1:1", "--decode-tp", "3"]), "invalid `--decode-tp`: 3 (a divisor of the 32 attention heads of llama-3-8b)"),
        ("a pool's EP on a dense model", Cli(&["simulate", "--disagg", "1:1", "--prefill-ep", "2"]), "invalid `--prefill-ep`: 2 (1: llama-3-8b has no experts)"),
        ("a pool's EP that divides no experts", Cli(&["simulate", "--model", "mixtral-8x7b", "--disagg", "1:1", "--decode-ep", "3"]), "invalid `--decode-ep`: 3 (a divisor of the 8 experts of mixtral-8x7b)"),
        ("a pool of no GPUs", Cli(&["simulate", "--disagg", "1:1", "--prefill-tp", "0"]), "invalid `--prefill-tp`: 0 (an integer from 1 to 4,096)"),
        ("a pool past the GPU bound", Cli(&["simulate", "--disagg", "1:1", "--decode-tp", "5000"]), "invalid `--decode-tp`: 5000 (an integer from 1 to 4,096)"),
        ("a pool's TP in words", Cli(&["simulate", "--disagg", "1:1", "--prefill-tp", "two"]), "invalid `--prefill-tp`: \"two\""),
        ("pools past the aggregated comparison's instances", Cli(&["simulate", "--model", "llama-3.1-70b", "--disagg", "1:1", "--prefill-tp", "64"]), "invalid `--disagg`: 1:1 (pools whose GPUs (65) hold at most 64 aggregated instances of the scenario's layout (1 GPU), the deployment it is compared with)"),
        ("a draft model with pools of their own layouts", Cli(&["simulate", "--disagg", "1:1", "--decode-tp", "2", "--spec-depth", "2", "--draft-model", "llama-3.2-1b"]), "invalid `--draft-model`: given (pools of the scenario's layout, without --prefill-tp, --prefill-ep, --decode-tp or --decode-ep: the draft model is laid out as the scenario)"),
        ("a dataflow diagram of the whole model", Cli(&["zoom", "--plot", "x.svg"]), "invalid `--plot`: `--at model` is not a layer or a block (the dataflow diagram draws layer.N, layer.N.attn or layer.N.mlp)"),
        ("a dataflow diagram of one operator", Cli(&["zoom", "--at", "layer.0.mlp.up", "--plot", "x.svg"]), "invalid `--plot`: `--at layer.0.mlp.up` is not a layer or a block"),
    ]
}

/// No error line is longer than this, whatever the input.
const MAX_ERROR_LINE_BYTES: usize = 1000;

#[test]
fn every_bad_input_gets_one_clear_line_and_exit_code_2() {
    let mut cases = cases();
    assert!(cases.len() >= 30);
    cases.extend(checkpoint_cases());
    let mut failures = Vec::new();
    for (i, (name, input, expected)) in cases.into_iter().enumerate() {
        let mut cmd = crate::harness::cli();
        if !matches!(input, Input::Cmd(_) | Input::Cli(_)) {
            cmd.arg("ledger");
        }
        match &input {
            Input::Config(b) => cmd.args(["--model", &temp(&format!("case{i}.json"), b)]),
            Input::GpuFile(b) => cmd.args(["--gpu", &temp(&format!("case{i}.toml"), b)]),
            Input::Histogram(b) => cmd.args(["--histogram", &temp(&format!("case{i}.csv"), b)]),
            Input::Args(a) | Input::Cli(a) => cmd.args(*a),
            Input::Cmd(a) => cmd.args(a),
            Input::Gguf(b) => cmd.args(["--model", &temp(&format!("case{i}.gguf"), b)]),
            Input::Safetensors(b) => {
                let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("cli-tests").join(format!("case{i}-st"));
                std::fs::create_dir_all(&dir).unwrap();
                std::fs::write(dir.join("config.json"), format!("{{{LLAMA}}}")).unwrap();
                std::fs::write(dir.join("model.safetensors"), b).unwrap();
                cmd.args(["--model", dir.to_str().unwrap()])
            }
        };
        let out = cmd.timeout(std::time::Duration::from_secs(60)).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        let ok = out.status.code() == Some(2)
            && out.stdout.is_empty()
            && err.lines().count() == 1
            && err.len() <= MAX_ERROR_LINE_BYTES
            && err.starts_with("error: ")
            && err.contains(expected)
            && !err.contains("panicked");
        if !ok {
            failures.push(format!("{name}: code {:?}, stderr {err:?}, expected {expected:?}", out.status.code()));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Odd quantisation settings that have a sound fallback are accepted, and the fallback is said in
/// the ledger's notes (table footer and JSON `notes`); settings the model covers add no note.
#[test]
fn quantisation_fallbacks_are_noted_in_the_ledger() {
    let ledger = |name: &str, q: &str, format: &str| {
        let path = temp(name, &llama_with(&format!("\"quantization_config\": {q}")));
        let out = crate::harness::cli()
            .args(["ledger", "--model", &path, "--format", format])
            .timeout(std::time::Duration::from_secs(60))
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{q}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap()
    };
    let int8_groups = r#"{"quant_method": "gptq", "bits": 8, "group_size": 128}"#;
    let note = "quantization_config: gptq 8-bit weights with a scale per 128 values are counted as int8 without the scales (3.1 % of the weight bytes left out)";
    assert!(ledger("q-int8.json", int8_groups, "table").contains(&format!("note: {note}")));
    let json: serde_json::Value = serde_json::from_str(&ledger("q-int8.json", int8_groups, "json")).unwrap();
    assert!(json["notes"].as_array().unwrap().iter().any(|n| n == note), "{}", json["notes"]);
    let double = r#"{"quant_method": "bitsandbytes", "load_in_4bit": true, "bnb_4bit_use_double_quant": true}"#;
    assert!(ledger("q-bnb.json", double, "table").contains("note: quantization_config.bnb_4bit_use_double_quant"));
    // Per-channel GPTQ (-1) is modelled (int4), so it parses without a note.
    let per_channel = ledger("q-g-1.json", r#"{"quant_method": "gptq", "bits": 4, "group_size": -1}"#, "table");
    assert!(!per_channel.contains("quantization_config"), "{per_channel}");
    assert!(per_channel.contains("int4"), "{per_channel}");
}

fn llm_ledger(args: &[&str]) -> std::process::Output {
    crate::harness::cli().args(args).timeout(std::time::Duration::from_secs(120)).output().unwrap()
}

fn scratch(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Llama 3.1 8B's config.json with 16 layers instead of 32.
const LLAMA_16_LAYERS: &str = r#"{"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096,
    "intermediate_size": 14336, "num_attention_heads": 32, "num_hidden_layers": 16, "num_key_value_heads": 8,
    "vocab_size": 128256, "rms_norm_eps": 1e-05, "rope_theta": 500000.0, "tie_word_embeddings": false,
    "torch_dtype": "bfloat16"}"#;

/// A file in a folder named like a preset (or a file named like one) is that file,
/// not the preset, and the title names the file.
#[test]
fn a_model_path_always_means_that_file_even_when_it_looks_like_a_preset() {
    let dir = scratch("preset-lookalikes");
    let write = |rel: &str| {
        let p = dir.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, LLAMA_16_LAYERS).unwrap();
        p
    };
    let mine = write("my-llama/config.json");
    let json = |arg: &str| -> serde_json::Value {
        let out = llm_ledger(&["ledger", "--model", arg, "--format", "json"]);
        assert!(out.status.success(), "{arg}: {}", String::from_utf8_lossy(&out.stderr));
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let expected = json(dir.join("my-llama").to_str().unwrap());
    let preset = json("llama-3.1-8b");
    assert_eq!(expected["rows"][1]["layers"], 16, "attn_norm runs in 16 layers");
    assert_eq!(preset["rows"][1]["layers"], 32);
    assert!(expected["step_time_s"].as_f64().unwrap() < 0.6 * preset["step_time_s"].as_f64().unwrap());
    write("Llama-3.1-8B/config.json");
    write("llama-3.1-8b.json");
    write("DeepSeek-R1/config.json");
    let cases = [
        (dir.join("Llama-3.1-8B"), dir.join("Llama-3.1-8B").join("config.json")),
        (dir.join("Llama-3.1-8B").join("config.json"), dir.join("Llama-3.1-8B").join("config.json")),
        (dir.join("llama-3.1-8b.json"), dir.join("llama-3.1-8b.json")),
        (dir.join("DeepSeek-R1"), dir.join("DeepSeek-R1").join("config.json")),
        (mine.clone(), mine),
    ];
    for (arg, file) in cases {
        let arg = arg.to_str().unwrap();
        let v = json(arg);
        for key in ["rows", "total", "step_time_s", "tokens_per_s"] {
            assert_eq!(v[key], expected[key], "{arg}: {key}");
        }
        assert_eq!(v["inputs"]["model"], file.to_str().unwrap(), "{arg}");
        let table = llm_ledger(&["ledger", "--model", arg]);
        let title = String::from_utf8_lossy(&table.stdout).lines().next().unwrap_or("").to_string();
        assert!(title.starts_with(&format!("{} on h100-sxm · decode", file.display())), "{title}");
    }
}

/// The same for `--gpu PATH`: a GPU file whose entry is named like a built-in GPU (`h100`) is used,
/// and the title names the file.
#[test]
fn a_gpu_path_always_means_that_file() {
    let dir = scratch("gpu-lookalike");
    let file = dir.join("h100.toml");
    std::fs::write(&file, String::from_utf8(gpu_with("name", "\"h100\"")).unwrap()).unwrap();
    let path = file.to_str().unwrap();
    let step = |args: &[&str]| -> f64 {
        let out = llm_ledger(&[&["ledger", "--format", "json", "--time-model", "roofline"], args].concat());
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap()["step_time_s"].as_f64().unwrap()
    };
    // 1 TB/s against the H100's 3.35 TB/s: a memory-bound step 3.35× as long (on the roofline
    // clock; the measured clock's kernel costs do not scale with bandwidth).
    let ratio = step(&["--gpu", path]) / step(&["--gpu", "h100"]);
    assert!((ratio - 3.35).abs() < 0.01, "{ratio}");
    let out = llm_ledger(&["ledger", "--gpu", path]);
    assert!(String::from_utf8_lossy(&out.stdout).starts_with(&format!("llama-3-8b on {path} · decode")));
    let out = llm_ledger(&["tile", "--m", "16", "--n", "4096", "--k", "4096", "--gpu", path, "--format", "json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

/// A FIFO (any non-regular file) named by any file flag is refused by its
/// metadata at once, instead of blocking on open or read.
#[cfg(unix)]
#[test]
fn a_fifo_is_refused_at_once_by_every_file_flag() {
    let dir = scratch("fifo");
    let fifo = dir.join("input");
    assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let fifo = fifo.to_str().unwrap();
    for flag in ["--model", "--histogram", "--gpu", "--gpu-file", "--preset-file", "--expert-loads"] {
        let out = crate::harness::cli()
            .args(["ledger", flag, fifo])
            .timeout(std::time::Duration::from_secs(10))
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{flag}: {err}");
        assert_eq!(err.lines().count(), 1, "{flag}: {err}");
        assert!(err.contains(&format!("`{fifo}` is not a regular file")), "{flag}: {err}");
    }
    // A directory as --model still means its config.json.
    let out = llm_ledger(&["ledger", "--model", dir.to_str().unwrap()]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("config.json"), "{out:?}");
}

/// A histogram of 1,048,576 distinct lengths (once 179 s for 3.8 MB: a quadratic
/// merge) loads; the bound only catches a hang (speed: `cargo bench -p llm-ledger-core -- histogram`).
#[test]
fn a_one_million_line_histogram_loads() {
    let dir = scratch("big-histogram");
    let n = 1u64 << 20;
    let mut text = String::from("context,count\n");
    for i in 0..n {
        text.push_str(&format!("{},1\n", (i * 769_957) % n + 1));
    }
    let file = dir.join("mix.csv");
    std::fs::write(&file, text).unwrap();
    let out = llm_ledger(&["kv", "--histogram", file.to_str().unwrap(), "--format", "json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["inputs"]["batch"], n);
}
