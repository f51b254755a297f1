//! Checkpoint headers. Small safetensors and GGUF files written byte by byte here; the
//! CLI reads only their headers.

use crate::harness::{cli, fails, json, ok};
use crate::hub::{put_snapshot, scratch};
use serde_json::Value;
use std::path::Path;

/// The small llama of these tests: hidden 64, 2 layers, 4 heads of 16, 2 KV heads, MLP 128,
/// vocabulary 100, untied head.
const SMALL: &str = r#"{"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
  "num_key_value_heads": 2, "intermediate_size": 128, "vocab_size": 100, "tie_word_embeddings": false}"#;

/// Tensors as (name, shape).
type Tensors = Vec<(String, Vec<u64>)>;

/// The tensors of SMALL: matrices, then norms.
fn small_tensors() -> (Tensors, Tensors) {
    let mut m =
        vec![("model.embed_tokens.weight".to_string(), vec![100, 64]), ("lm_head.weight".into(), vec![100, 64])];
    let mut n = vec![("model.norm.weight".to_string(), vec![64])];
    for l in 0..2 {
        for (p, shape) in [
            ("self_attn.q_proj", [64, 64]),
            ("self_attn.k_proj", [32, 64]),
            ("self_attn.v_proj", [32, 64]),
            ("self_attn.o_proj", [64, 64]),
            ("mlp.gate_proj", [128, 64]),
            ("mlp.up_proj", [128, 64]),
            ("mlp.down_proj", [64, 128]),
        ] {
            m.push((format!("model.layers.{l}.{p}.weight"), shape.to_vec()));
        }
        for p in ["input_layernorm", "post_attention_layernorm"] {
            n.push((format!("model.layers.{l}.{p}.weight"), vec![64]));
        }
    }
    (m, n)
}

/// A safetensors file: the 8-byte little-endian header length, the JSON header, zero data.
pub fn safetensors(tensors: &[(String, &str, Vec<u64>)]) -> Vec<u8> {
    let mut header = serde_json::Map::new();
    let mut at = 0u64;
    for (name, dtype, shape) in tensors {
        let bits: u64 = match *dtype {
            "F32" | "I32" => 32,
            "BF16" | "F16" => 16,
            _ => 8,
        };
        // An absurd shape (a bad-input case) gets no data.
        let len = shape.iter().try_fold(bits, |a, d| a.checked_mul(*d)).map_or(0, |b| b / 8);
        header
            .insert(name.clone(), serde_json::json!({"dtype": dtype, "shape": shape, "data_offsets": [at, at + len]}));
        at += len;
    }
    let text = serde_json::to_vec(&header).unwrap();
    let mut out = (text.len() as u64).to_le_bytes().to_vec();
    out.extend(text);
    out.resize(out.len() + at as usize, 0);
    out
}

/// A model folder with SMALL's config.json and a checkpoint whose matrices are `dtype` (with one
/// F32 scale each when `scales`), norms BF16.
fn small_checkpoint(name: &str, dtype: &str, scales: bool) -> String {
    let dir = scratch(name);
    std::fs::write(dir.join("config.json"), SMALL).unwrap();
    let (m, n) = small_tensors();
    let mut t: Vec<(String, &str, Vec<u64>)> = Vec::new();
    for (name, shape) in m {
        if scales {
            t.push((format!("{name}_scale_inv"), "F32", vec![1]));
        }
        t.push((name, dtype, shape));
    }
    t.extend(n.into_iter().map(|(name, shape)| (name, "BF16", shape)));
    std::fs::write(dir.join("model.safetensors"), safetensors(&t)).unwrap();
    dir.to_string_lossy().into_owned()
}

fn weight_bytes(v: &Value) -> f64 {
    v["weight_memory_bytes"].as_f64().unwrap_or_else(|| panic!("weight_memory_bytes in {v}"))
}

fn notes(v: &Value) -> String {
    v["notes"].as_array().map(|a| a.iter().filter_map(Value::as_str).collect::<Vec<_>>().join("\n")).unwrap_or_default()
}

/// An FP8 safetensors checkpoint shows half the weight bytes of its bf16
/// config (matrices; the norms stay bf16 in both), and the headers' exact bytes, scales
/// included, are reported against what the config implies.
#[test]
fn fp8_checkpoint_halves_the_weight_bytes_of_its_bf16_config() {
    let config = scratch("bf16-config").join("config.json");
    std::fs::write(&config, SMALL).unwrap();
    let bf16 = json(&["kv", "--model", config.to_str().unwrap(), "--format", "json"]);
    let fp8_dir = small_checkpoint("fp8-checkpoint", "F8_E4M3", true);
    let fp8 = json(&["kv", "--model", &fp8_dir, "--format", "json"]);
    // SMALL: matrices 2 × 100·64 + 2 × (2 × 64·64 + 2 × 32·64 + 3 × 128·64) = 12 800 + 2 × 36 864
    // = 86 528 parameters; norms 64 × 5 = 320.
    let (matrices, norms) = (86_528.0, 320.0);
    assert_eq!(weight_bytes(&bf16), 2.0 * matrices + 2.0 * norms);
    assert_eq!(weight_bytes(&fp8), matrices + 2.0 * norms);
    // The headers: 86 528 fp8 bytes + 16 scales × 4 bytes + 640 norm bytes = 87 232, in 16
    // matrices, 16 scales and 5 norms.
    let ledger = json(&["ledger", "--model", &fp8_dir, "--format", "json"]);
    let n = notes(&ledger);
    assert!(
        n.contains(
            "weights from checkpoint headers: 87232 bytes in 37 tensors of 1 file(s) (config implies 173696 bytes)"
        ),
        "{n}"
    );
    assert!(
        n.contains("stored as embedding F8_E4M3") && n.contains("the ledger stores each class at its header dtype"),
        "{n}"
    );
    // The table says so too.
    let table = ok(&["ledger", "--model", &fp8_dir]);
    assert!(table.contains("note: weights from checkpoint headers: 87232 bytes"), "{table}");
}

/// A ModelOpt checkpoint keeps its quantisation in `hf_quant_config.json` beside a config.json
/// without one: the folder, and its config.json by path, read it as the `quantization_config`
/// it stands for.
#[test]
fn modelopt_quant_file_beside_the_config_is_its_quantization_config() {
    let sidecar = r#"{"producer": {"name": "modelopt", "version": "0.29.0"}, "quantization": {"quant_algo": "NVFP4",
      "kv_cache_quant_algo": "FP8", "group_size": 16, "exclude_modules": ["lm_head"]}}"#;
    let dir = scratch("modelopt-sidecar");
    std::fs::write(dir.join("config.json"), SMALL).unwrap();
    std::fs::write(dir.join("hf_quant_config.json"), sidecar).unwrap();
    let inline = scratch("modelopt-inline").join("config.json");
    let with_config = SMALL.trim_end().trim_end_matches('}').to_string()
        + r#", "quantization_config": {"quant_method": "modelopt", "quant_algo": "NVFP4", "kv_cache_quant_algo": "FP8",
      "group_size": 16, "exclude_modules": ["lm_head"]}}"#;
    std::fs::write(&inline, with_config).unwrap();
    let bare = scratch("modelopt-bare").join("config.json");
    std::fs::write(&bare, SMALL).unwrap();
    let kv = |m: &str| json(&["kv", "--model", m, "--format", "json"]);
    let by_dir = kv(dir.to_str().unwrap());
    let by_path = kv(dir.join("config.json").to_str().unwrap());
    assert_eq!(weight_bytes(&by_dir), weight_bytes(&kv(inline.to_str().unwrap())));
    assert_eq!(weight_bytes(&by_path), weight_bytes(&by_dir));
    assert!(weight_bytes(&by_dir) < 0.5 * weight_bytes(&kv(bare.to_str().unwrap())));
    let n = notes(&json(&["ledger", "--model", dir.to_str().unwrap(), "--format", "json"]));
    assert!(n.contains("weight formats from hf_quant_config.json (NVIDIA ModelOpt)"), "{n}");
    assert!(n.contains("kv_cache_quant_algo FP8 is not applied"), "{n}");
    // A bad file beside the config is named.
    let bad = scratch("modelopt-bad");
    std::fs::write(bad.join("config.json"), SMALL).unwrap();
    std::fs::write(bad.join("hf_quant_config.json"), r#"{"quantization": 4}"#).unwrap();
    let err = fails(&["ledger", "--model", bad.to_str().unwrap()]);
    assert!(err.contains("hf_quant_config.json: quantization"), "{err}");
}

/// A bf16 checkpoint changes nothing but adds the note; a bf16 config by path is unchanged.
#[test]
fn bf16_checkpoint_keeps_the_numbers() {
    let dir = small_checkpoint("bf16-checkpoint", "BF16", false);
    let config = Path::new(&dir).join("config.json");
    let with_headers = json(&["kv", "--model", &dir, "--format", "json"]);
    let by_config = json(&["kv", "--model", config.to_str().unwrap(), "--format", "json"]);
    assert_eq!(weight_bytes(&with_headers), weight_bytes(&by_config));
    let n = notes(&json(&["ledger", "--model", &dir, "--format", "json"]));
    assert!(n.contains("weights from checkpoint headers: 173696 bytes in 21 tensors"), "{n}");
    assert!(!n.contains("differs from the config"), "{n}");
}

/// A Hub snapshot with a safetensors shard reads its headers too.
#[test]
fn hub_snapshot_headers() {
    let cache = scratch("hub-headers");
    let fp8 = small_checkpoint("hub-headers-src", "F8_E4M3", false);
    let shard = std::fs::read(Path::new(&fp8).join("model.safetensors")).unwrap();
    put_snapshot(
        &cache,
        "org/small-fp8",
        "0123456789abcdef0123456789abcdef01234567",
        Some("main"),
        &[("config.json", SMALL.as_bytes()), ("model.safetensors", &shard)],
    );
    let out = cli()
        .env("HF_HUB_CACHE", &cache)
        .args(["kv", "--model", "org/small-fp8", "--format", "json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(weight_bytes(&v), 86_528.0 + 640.0);
}

/// A GGUF metadata value.
pub enum Kv {
    U32(u32),
    F32(f32),
    Str(&'static str),
    /// An array of this many short strings.
    Strings(u64),
}

fn gguf_string(out: &mut Vec<u8>, s: &str) {
    out.extend((s.len() as u64).to_le_bytes());
    out.extend(s.as_bytes());
}

/// A GGUF v3 file: the metadata, the tensor infos (name, dims innermost first, ggml type id,
/// bytes) and zero data at 32-byte alignment. `data` false leaves the data out (a truncated file).
pub fn gguf(kvs: &[(&str, Kv)], tensors: &[(String, Vec<u64>, u32, u64)], data: bool) -> Vec<u8> {
    let mut out = b"GGUF".to_vec();
    out.extend(3u32.to_le_bytes());
    out.extend((tensors.len() as u64).to_le_bytes());
    out.extend((kvs.len() as u64).to_le_bytes());
    for (k, v) in kvs {
        gguf_string(&mut out, k);
        match v {
            Kv::U32(x) => {
                out.extend(4u32.to_le_bytes());
                out.extend(x.to_le_bytes());
            }
            Kv::F32(x) => {
                out.extend(6u32.to_le_bytes());
                out.extend(x.to_le_bytes());
            }
            Kv::Str(s) => {
                out.extend(8u32.to_le_bytes());
                gguf_string(&mut out, s);
            }
            Kv::Strings(n) => {
                out.extend(9u32.to_le_bytes());
                out.extend(8u32.to_le_bytes());
                out.extend(n.to_le_bytes());
                for i in 0..*n {
                    gguf_string(&mut out, &format!("t{i}"));
                }
            }
        }
    }
    let mut offset = 0u64;
    for (name, dims, ty, bytes) in tensors {
        gguf_string(&mut out, name);
        out.extend((dims.len() as u32).to_le_bytes());
        dims.iter().for_each(|d| out.extend(d.to_le_bytes()));
        out.extend(ty.to_le_bytes());
        out.extend(offset.to_le_bytes());
        offset += bytes.div_ceil(32) * 32;
    }
    if data {
        let start = out.len().div_ceil(32) * 32;
        out.resize(start + offset as usize, 0);
    }
    out
}

const F32: u32 = 0;
const Q4_K: u32 = 12;
const Q6_K: u32 = 14;

/// A Q4_K_M-style llama: hidden 256, 2 layers, 4 heads (head_dim 64), 2 KV heads, MLP 512,
/// vocabulary 100. Q4_K (144 bytes per 256 weights) for q, k, o, gate, up and the embedding; Q6_K
/// (210 bytes per 256) for v, down and the output head; F32 norms.
pub fn q4_k_m(data: bool) -> Vec<u8> {
    let bytes = |elements: u64, ty: u32| match ty {
        Q4_K => elements / 256 * 144,
        Q6_K => elements / 256 * 210,
        _ => elements * 4,
    };
    let mut t: Vec<(String, Vec<u64>, u32, u64)> = Vec::new();
    let mut add = |name: String, dims: Vec<u64>, ty: u32| {
        let e = dims.iter().product();
        t.push((name, dims, ty, bytes(e, ty)));
    };
    add("token_embd.weight".into(), vec![256, 100], Q4_K);
    add("output.weight".into(), vec![256, 100], Q6_K);
    add("output_norm.weight".into(), vec![256], F32);
    for l in 0..2 {
        add(format!("blk.{l}.attn_q.weight"), vec![256, 256], Q4_K);
        add(format!("blk.{l}.attn_k.weight"), vec![256, 128], Q4_K);
        add(format!("blk.{l}.attn_v.weight"), vec![256, 128], Q6_K);
        add(format!("blk.{l}.attn_output.weight"), vec![256, 256], Q4_K);
        add(format!("blk.{l}.ffn_gate.weight"), vec![256, 512], Q4_K);
        add(format!("blk.{l}.ffn_up.weight"), vec![256, 512], Q4_K);
        add(format!("blk.{l}.ffn_down.weight"), vec![512, 256], Q6_K);
        add(format!("blk.{l}.attn_norm.weight"), vec![256], F32);
        add(format!("blk.{l}.ffn_norm.weight"), vec![256], F32);
    }
    gguf(
        &[
            ("general.architecture", Kv::Str("llama")),
            ("general.name", Kv::Str("tiny")),
            ("llama.block_count", Kv::U32(2)),
            ("llama.embedding_length", Kv::U32(256)),
            ("llama.feed_forward_length", Kv::U32(512)),
            ("llama.attention.head_count", Kv::U32(4)),
            ("llama.attention.head_count_kv", Kv::U32(2)),
            ("llama.context_length", Kv::U32(4096)),
            ("llama.rope.freq_base", Kv::F32(500000.0)),
            ("tokenizer.ggml.tokens", Kv::Strings(100)),
        ],
        &t,
        data,
    )
}

/// A GGUF Q4_K_M model gives the bytes its quant types imply.
#[test]
fn gguf_q4_k_m_bytes_follow_the_block_layouts() {
    let path = crate::harness::temp_file("tiny-q4_k_m.gguf", &q4_k_m(true));
    let v = json(&["kv", "--model", &path, "--format", "json"]);
    // Per layer (elements → bytes): q 65 536 → 36 864 and o the same (Q4_K, ÷256 × 144);
    // k 32 768 → 18 432 (Q4_K); v 32 768 → 26 880 (Q6_K, ÷256 × 210); gate and up 131 072 →
    // 73 728 each (Q4_K); down 131 072 → 107 520 (Q6_K). Attention 119 040, MLP 254 976.
    // Embedding 25 600 → 14 400 (Q4_K); output 25 600 → 21 000 (Q6_K); norms 1 280 F32 = 5 120.
    let header_total = 2.0 * (119_040.0 + 254_976.0) + 14_400.0 + 21_000.0 + 5_120.0;
    assert_eq!(header_total, 788_552.0);
    // The ledger stores each class at its tensors' mean width (attention 8 × 119 040 ÷ 196 608
    // = 4.84375 bits, MLP 5.1875 bits, embedding 4.5, head 6.5625), so its matrices carry the
    // header's bytes exactly; norm scales are counted at bf16 (1 280 × 2).
    assert_eq!(weight_bytes(&v), header_total - 5_120.0 + 2_560.0);
    let ledger = json(&["ledger", "--model", &path, "--format", "json"]);
    let n = notes(&ledger);
    assert!(n.contains("weights from checkpoint headers: 788552 bytes in 21 tensors of 1 file(s)"), "{n}");
    assert!(n.contains("by ggml type (bytes): Q4_K 493632, Q6_K 289800, F32 5120"), "{n}");
    // Q4_K: 2 × (36 864 × 2 + 18 432 + 73 728 × 2) + 14 400; Q6_K: 2 × (26 880 + 107 520) + 21 000.
    assert_eq!(2 * (36_864 * 2 + 18_432 + 73_728 * 2) + 14_400, 493_632);
    assert_eq!(2 * (26_880 + 107_520) + 21_000, 289_800);
}

/// Hostile headers: one line naming the file and the field, exit 2 (more rows in bad_inputs.rs).
#[test]
fn bad_checkpoint_headers() {
    let dir = scratch("bad-headers");
    std::fs::write(dir.join("config.json"), SMALL).unwrap();
    let good = safetensors(&[("lm_head.weight".into(), "BF16", vec![100, 64])]);
    let cases: Vec<(Vec<u8>, &str)> = vec![
        (good[..4].to_vec(), "invalid `header length`: 4 bytes"),
        (
            [&(1u64 << 40).to_le_bytes()[..], b"{}"].concat(),
            "invalid `header length`: 1099511627776 (at most 100000000 bytes)",
        ),
        ([&1000u64.to_le_bytes()[..], b"{}"].concat(), "invalid `header length`: 1000 (at most the file's 2 bytes"),
        (good[..good.len() - 10].to_vec(), "invalid `lm_head.weight.data_offsets`"),
        (safetensors(&[("lm_head.weight".into(), "Q4", vec![4])]), "unknown dtype for `lm_head.weight.dtype` `Q4`"),
        (safetensors(&[("lm_head.weight".into(), "BF16", vec![1 << 40, 1 << 40])]), "invalid `lm_head.weight.shape`"),
    ];
    for (bytes, expected) in cases {
        std::fs::write(dir.join("model.safetensors"), &bytes).unwrap();
        let e = fails(&["ledger", "--model", dir.to_str().unwrap()]);
        assert!(e.contains("in safetensors file `") && e.contains(expected), "{expected}: {e}");
    }
    let full = q4_k_m(true);
    let truncated = crate::harness::temp_file("truncated.gguf", &full[..200]);
    let e = fails(&["ledger", "--model", &truncated]);
    assert!(e.contains("in GGUF file `") && e.contains("truncated header"), "{e}");
    let no_data = crate::harness::temp_file("no-data.gguf", &q4_k_m(false));
    let e = fails(&["ledger", "--model", &no_data]);
    assert!(e.contains("invalid `token_embd.weight.offset`"), "{e}");
}

/// The README's GGUF example file `examples/tiny-q4_k_m.gguf` is [`q4_k_m`]'s bytes (regenerate
/// with `UPDATE_EXAMPLES=1 cargo test -p llm-ledger --test it readme_gguf_example`).
#[test]
fn readme_gguf_example_is_the_test_model() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/tiny-q4_k_m.gguf");
    let bytes = q4_k_m(true);
    if std::env::var_os("UPDATE_EXAMPLES").is_some() {
        std::fs::write(&path, &bytes).unwrap();
    }
    assert!(std::fs::read(&path).unwrap() == bytes, "{} is stale: regenerate it", path.display());
}

/// A checkpoint that disagrees with its config is reported by tensor name; the header's bytes
/// still win.
#[test]
fn shape_mismatches_are_named() {
    let dir = scratch("mismatch");
    std::fs::write(dir.join("config.json"), SMALL).unwrap();
    let (m, n) = small_tensors();
    let mut t: Vec<(String, &str, Vec<u64>)> = m
        .into_iter()
        .map(|(name, shape)| {
            let shape = if name == "model.layers.1.mlp.up_proj.weight" { vec![256, 64] } else { shape };
            (name, "BF16", shape)
        })
        .collect();
    t.extend(n.into_iter().map(|(name, shape)| (name, "BF16", shape)));
    t.push(("model.layers.7.self_attn.q_proj.weight".into(), "BF16", vec![64, 64]));
    t.push(("model.vision_tower.patch.weight".into(), "BF16", vec![8, 8]));
    std::fs::write(dir.join("model.safetensors"), safetensors(&t)).unwrap();
    let n = notes(&json(&["ledger", "--model", dir.to_str().unwrap(), "--format", "json"]));
    // 173 696 + 128·64 × 2 (the wider up_proj) + 64·64 × 2 (layer 7) + 8·8 × 2 (vision) = 198 400 bytes.
    assert_eq!(173_696 + 128 * 64 * 2 + 64 * 64 * 2 + 8 * 8 * 2, 198_400);
    assert!(n.contains("weights from checkpoint headers: 198400 bytes in 23 tensors"), "{n}");
    assert!(n.contains("differs from the config by class (headers vs config, bytes): attention 57344 vs 49152, mlp 114688 vs 98304, other 128 vs 0"), "{n}");
    assert!(n.contains("1 tensor(s) not in the config's modules: model.vision_tower.patch.weight"), "{n}");
    assert!(
        n.contains("shapes differ from the config: model.layers.1.mlp.up_proj.weight [256, 64] (config [128, 64]), model.layers.7.self_attn.q_proj.weight [64, 64] (not in the config)"),
        "{n}"
    );
}

/// Packed integer weights without a quantization_config (GPTQ-style I32 words with F16 scales):
/// each such class is stored at its measured width, so the ledger's bytes are the header's.
#[test]
fn packed_integer_weights_are_measured() {
    let dir = scratch("packed");
    std::fs::write(dir.join("config.json"), SMALL).unwrap();
    let (m, n) = small_tensors();
    let mut t: Vec<(String, &str, Vec<u64>)> = Vec::new();
    for (name, shape) in m {
        if name.contains("layers") {
            // 4-bit values, 8 per I32 word along the input dimension, and one F16 scale per 32.
            let base = name.trim_end_matches(".weight").to_string();
            t.push((format!("{base}.qweight"), "I32", vec![shape[1] / 8, shape[0]]));
            t.push((format!("{base}.scales"), "F16", vec![shape[1] / 32, shape[0]]));
        } else {
            t.push((name, "BF16", shape));
        }
    }
    t.extend(n.into_iter().map(|(name, shape)| (name, "BF16", shape)));
    std::fs::write(dir.join("model.safetensors"), safetensors(&t)).unwrap();
    let v = json(&["kv", "--model", dir.to_str().unwrap(), "--format", "json"]);
    // Layers: 73 728 weights at 4 bits + 73 728 ÷ 32 scales × 2 bytes = 36 864 + 4 608 = 41 472
    // bytes, 4.5 bits per weight; the embedding and head stay bf16 (25 600), norms bf16 (640).
    assert_eq!(v["inputs"]["weight_precisions"]["attention"], "4.5bit", "{v}");
    assert_eq!(v["inputs"]["weight_precisions"]["mlp"], "4.5bit", "{v}");
    assert_eq!(weight_bytes(&v), 41_472.0 + 25_600.0 + 640.0);
}

/// A snapshot whose index names two shards, one downloaded: the note says the headers cover part
/// of the weights; an index naming none present reads no headers.
#[test]
fn partial_shards_are_said() {
    let dir = scratch("partial-shards");
    std::fs::write(dir.join("config.json"), SMALL).unwrap();
    let index = r#"{"weight_map": {"lm_head.weight": "model-00001-of-00002.safetensors",
        "model.embed_tokens.weight": "model-00002-of-00002.safetensors"}}"#;
    std::fs::write(dir.join("model.safetensors.index.json"), index).unwrap();
    let n = notes(&json(&["ledger", "--model", dir.to_str().unwrap(), "--format", "json"]));
    assert!(!n.contains("checkpoint headers"), "{n}");
    let shard = safetensors(&[("lm_head.weight".into(), "BF16", vec![100, 64])]);
    std::fs::write(dir.join("model-00001-of-00002.safetensors"), shard).unwrap();
    let n = notes(&json(&["ledger", "--model", dir.to_str().unwrap(), "--format", "json"]));
    assert!(n.contains("weights from checkpoint headers: 12800 bytes in 1 tensors of 1 file(s)"), "{n}");
    assert!(n.contains("only 1 of the 2 shards model.safetensors.index.json names are present"), "{n}");
}
