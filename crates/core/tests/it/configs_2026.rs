//! Every real `config.json` of a 2025–2026 model in `tests/data/configs/2026/` (copied from NVIDIA
//! AIConfigurator's repository; provenance and sizes in that folder's `SOURCES.md`, reproduced by
//! `scripts/configs/vendor.py`) is read, and weighs its published size within 3 %.
//!
//! Published sizes are the model cards' (and technical reports') totals, on the basis each states:
//! the text model alone, with its vision tower, or with its multi-token-prediction layers
//! (GLM-5.1's 754B). A size published only as a name (`Qwen3-VL-2B`) is a rounded label, checked
//! within 10 %.

use llm_ledger_core::model::{parse_config_json, Attention, ModelSpec};
use llm_ledger_core::Precision;
use std::path::PathBuf;

/// What a published size counts.
#[derive(Debug, Clone, Copy)]
enum Basis {
    /// The language model.
    Text,
    /// The language model and its vision tower.
    TextVision,
    /// The language model and its multi-token-prediction layers.
    TextMtp,
    /// Only a name (a rounded label of the whole checkpoint, towers included), checked within 10 %.
    Name,
}

use Basis::*;

/// (folder, published total in billions, basis); sources in the research notes each figure
/// came from: the model cards (Qwen, Meta, Google, NVIDIA, Moonshot, MiniMax, StepFun, Xiaomi,
/// Z.ai, DeepSeek) and technical reports (GLM-5 Table 1, Kimi K2, MiMo-V2-Flash).
const PUBLISHED: &[(&str, f64, Basis)] = &[
    ("MiniMaxAI--MiniMax-M2.5", 229.9, Text),
    ("MiniMaxAI--MiniMax-M2.7", 229.9, Text),
    ("MiniMaxAI--MiniMax-M3", 428.0, TextVision),
    ("Qwen--Qwen3-0.6B", 0.6, Text),
    ("Qwen--Qwen3-1.7B", 1.7, Text),
    ("Qwen--Qwen3-235B-A22B-FP8", 235.0, Text),
    ("Qwen--Qwen3-32B", 32.8, Text),
    ("Qwen--Qwen3-32B-FP8", 32.8, Text),
    ("Qwen--Qwen3-32B-FP8-Static-PerTensor", 32.8, Text),
    ("Qwen--Qwen3-Coder-480B-A35B-Instruct", 480.0, Text),
    ("Qwen--Qwen3-VL-235B-A22B-Instruct", 235.0, Text),
    ("Qwen--Qwen3-VL-2B-Instruct", 2.0, Name),
    ("Qwen--Qwen3-VL-30B-A3B-Instruct", 31.07, TextVision),
    ("Qwen--Qwen3-VL-32B-Instruct", 32.0, Name),
    ("Qwen--Qwen3-VL-32B-Thinking", 32.0, Name),
    ("Qwen--Qwen3-VL-4B-Instruct", 4.44, TextVision),
    ("Qwen--Qwen3-VL-8B-Instruct", 8.77, TextVision),
    ("Qwen--Qwen3.5-122B-A10B", 122.0, TextVision),
    ("Qwen--Qwen3.5-27B", 27.0, TextVision),
    ("Qwen--Qwen3.5-35B-A3B", 35.0, TextVision),
    ("Qwen--Qwen3.5-397B-A17B", 397.0, TextVision),
    ("XiaomiMiMo--MiMo-7B-Base", 7.8, TextMtp),
    ("XiaomiMiMo--MiMo-V2-Flash", 309.0, Text),
    ("deepseek-ai--DeepSeek-V3.2", 671.0, Text),
    ("deepseek-ai--DeepSeek-V4-Flash", 284.0, Text),
    ("deepseek-ai--DeepSeek-V4-Pro", 1600.0, Text),
    ("google--gemma-4-26B-A4B", 25.2, Text),
    ("meta-llama--Llama-4-Maverick-17B-128E-Instruct", 400.0, TextVision),
    ("meta-llama--Llama-4-Scout-17B-16E-Instruct", 109.0, TextVision),
    ("moonshotai--Kimi-K2-Instruct", 1040.0, Text),
    ("moonshotai--Kimi-K2.5", 1040.0, Text),
    ("moonshotai--Kimi-K3", 2800.0, TextVision),
    ("nvidia--DeepSeek-V3.1-NVFP4", 671.0, Text),
    ("nvidia--DeepSeek-V3.2-NVFP4", 671.0, Text),
    ("nvidia--DeepSeek-V4-Flash-NVFP4", 284.0, Text),
    ("nvidia--DeepSeek-V4-Pro-NVFP4", 1600.0, Text),
    ("nvidia--GLM-5-NVFP4", 744.0, Text),
    ("nvidia--GLM-5.1-NVFP4", 754.0, TextMtp),
    ("nvidia--GLM-5.2-NVFP4", 744.0, Text),
    ("nvidia--Gemma-4-26B-A4B-NVFP4", 25.2, Text),
    ("nvidia--Gemma-4-31B-IT-NVFP4", 30.7, Text),
    ("nvidia--Kimi-K2.5-NVFP4", 1040.0, Text),
    ("nvidia--Kimi-K2.6-NVFP4", 1040.0, Text),
    ("nvidia--Kimi-K2.7-Code-NVFP4", 1040.0, Text),
    ("nvidia--Llama-3.1-70B-Instruct-FP8", 70.6, Text),
    ("nvidia--Llama-3_3-Nemotron-Super-49B-v1", 49.0, Text),
    ("nvidia--MiniMax-M2.5-NVFP4", 229.9, Text),
    ("nvidia--MiniMax-M2.7-NVFP4", 229.9, Text),
    ("nvidia--NVIDIA-Nemotron-3-Nano-30B-A3B-BF16", 31.6, Text),
    ("nvidia--NVIDIA-Nemotron-3-Nano-30B-A3B-NVFP4", 31.6, Text),
    ("nvidia--NVIDIA-Nemotron-3-Super-120B-A12B-FP8", 120.0, Text),
    ("nvidia--NVIDIA-Nemotron-3-Super-120B-A12B-NVFP4", 120.0, Text),
    ("nvidia--NVIDIA-Nemotron-3-Ultra-550B-A55B-BF16", 550.0, Text),
    ("nvidia--NVIDIA-Nemotron-3-Ultra-550B-A55B-FP8", 550.0, Text),
    ("nvidia--NVIDIA-Nemotron-3-Ultra-550B-A55B-NVFP4", 550.0, Text),
    ("nvidia--Nemotron-H-56B-Base-8K", 56.0, Text),
    ("nvidia--Qwen3-235B-A22B-NVFP4", 235.0, Text),
    ("nvidia--Qwen3.5-122B-A10B-NVFP4", 122.0, TextVision),
    ("nvidia--Qwen3.5-397B-A17B-NVFP4", 397.0, TextVision),
    ("nvidia--Qwen3.6-27B-NVFP4", 27.0, TextVision),
    ("nvidia--Qwen3.6-35B-A3B-NVFP4", 35.0, TextVision),
    ("sgl-project--DeepSeek-V4-Flash-FP8", 284.0, Text),
    ("sgl-project--DeepSeek-V4-Pro-FP8", 1600.0, Text),
    ("stepfun-ai--Step-3.7-Flash", 196.0, Text),
    ("stepfun-ai--Step-3.7-Flash-FP8", 196.0, Text),
    ("zai-org--GLM-5", 744.0, Text),
    ("zai-org--GLM-5-FP8", 744.0, Text),
    ("zai-org--GLM-5.1", 754.0, TextMtp),
    ("zai-org--GLM-5.1-FP8", 754.0, TextMtp),
    ("zai-org--GLM-5.2", 744.0, Text),
    ("zai-org--GLM-5.2-FP8", 744.0, Text),
];

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/configs/2026")
}

fn model(folder: &str) -> ModelSpec {
    let text = std::fs::read_to_string(dir().join(folder).join("config.json")).unwrap();
    parse_config_json(&text, folder).unwrap_or_else(|e| panic!("{folder}: {e}"))
}

#[test]
fn every_vendored_file_has_the_size_its_sources_table_records() {
    let sources = std::fs::read_to_string(dir().join("SOURCES.md")).unwrap();
    let mut checked = 0;
    for line in sources.lines().filter(|l| l.starts_with("| `")) {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        let file = cells[1].trim_matches('`');
        let bytes: usize = cells[5].parse().unwrap();
        let got = std::fs::metadata(dir().join(file)).unwrap_or_else(|e| panic!("{file}: {e}")).len() as usize;
        assert_eq!(got, bytes, "{file}");
        checked += 1;
    }
    assert!(checked >= 80, "SOURCES.md lists {checked} files");
}

/// Every config is read, and weighs its published size within 3 % (a name-only size within 10 %).
#[test]
fn every_real_2026_config_is_read_and_weighs_its_published_size() {
    let folders: Vec<String> = std::fs::read_dir(dir())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.path().join("config.json").is_file())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert!(folders.len() >= 70, "{} configs", folders.len());
    let mut report = Vec::new();
    for folder in &folders {
        let (_, published, basis) = PUBLISHED
            .iter()
            .find(|(f, _, _)| f == folder)
            .unwrap_or_else(|| panic!("{folder}: add its published size to PUBLISHED"));
        let m = model(folder);
        let text = m.total_params() as f64;
        let counted = match basis {
            Text => text,
            TextVision | Name => text + m.vision_params as f64,
            TextMtp => text + m.mtp_params() as f64,
        };
        let off = counted / (published * 1e9) - 1.0;
        let tolerance = match basis {
            Name => 0.10,
            Text | TextVision | TextMtp => 0.03,
        };
        report.push(format!("{folder}: {:.3}B against {published}B ({basis:?}), {:+.2} %", counted / 1e9, off * 100.0));
        assert!(off.abs() < tolerance, "{}", report.last().unwrap());
    }
    assert_eq!(report.len(), folders.len());
}

/// The target for a hybrid: Qwen3.5-27B keeps KV for its 16 full-attention layers only
/// (16 · 2 · 4 KV heads · 256 · 2 B = 65,536 B a token in bf16), and each sequence holds its 48
/// Gated DeltaNet layers' state: 48 value heads × 128 × 128 in fp32 (`mamba_ssm_dtype`) and the
/// convolution's last 3 inputs of 2·16·128 + 48·128 channels in bf16 = 154 MB.
#[test]
fn qwen35_27b_caches_kv_for_its_16_full_layers_and_state_for_its_48_linear_ones() {
    let m = model("Qwen--Qwen3.5-27B");
    let (full, linear) = m.layers().iter().fold((0, 0), |(f, l), x| match x.attention {
        Attention::Standard(_) => (f + 1, l),
        Attention::Recurrent(_) => (f, l + 1),
        _ => (f, l),
    });
    assert_eq!((full, linear), (16, 48));
    assert_eq!(m.kv_bytes_per_token(Precision::Bf16), (16 * 2 * 4 * 256 * 2) as f64);
    assert_eq!(m.kv_bytes_per_token(Precision::Bf16), 65_536.0);
    let state = 48.0 * (48.0 * 128.0 * 128.0 * 4.0 + (2.0 * 16.0 * 128.0 + 48.0 * 128.0) * 3.0 * 2.0);
    assert_eq!(m.state_bytes_per_sequence(Precision::Bf16), state);
    assert!((state / 1e6 - 154.0).abs() < 0.5, "{state}");
}

/// A config whose `model_type` no family has is read by its `architectures` class, with a note.
#[test]
fn an_unknown_model_type_of_a_known_class_is_read_by_its_class() {
    let text = std::fs::read_to_string(dir().join("moonshotai--Kimi-K2-Instruct/config.json")).unwrap();
    let renamed = text.replace("\"kimi_k2\"", "\"kimi_k9\"");
    assert_ne!(renamed, text);
    let m = parse_config_json(&renamed, "k9").unwrap();
    assert_eq!(m.family, "deepseek_v3");
    assert!(m.notes.iter().any(|n| n.contains("kimi_k9") && n.contains("DeepseekV3ForCausalLM")), "{:?}", m.notes);
    assert_eq!(m.total_params(), model("moonshotai--Kimi-K2-Instruct").total_params());
}

/// A compressed-tensors checkpoint whose groups differ (`format: mixed-precision`): FP8 blocks
/// for the attention's projections, NVFP4 for every `ffn` projection, as a re-quantised
/// DeepSeek-V4-Flash has. Each class takes the format of the group whose targets name its
/// modules, and the config's own groups beat the original release's `expert_dtype: fp4`.
#[test]
fn mixed_compressed_tensors_groups_set_each_class() {
    use llm_ledger_core::model::CheckpointQuant;
    let text = std::fs::read_to_string(dir().join("deepseek-ai--DeepSeek-V4-Flash/config.json")).unwrap();
    let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
    let fp8 = serde_json::json!({"num_bits": 8, "type": "float", "strategy": "block", "block_structure": [128, 128]});
    let fp4 = serde_json::json!({"num_bits": 4, "type": "float", "strategy": "tensor_group", "group_size": 16});
    v["quantization_config"] = serde_json::json!({
        "quant_method": "compressed-tensors", "format": "mixed-precision", "ignore": [],
        "kv_cache_scheme": null, "sparsity_config": {},
        "config_groups": {
            "group_0": {"targets": ["re:.*attn.*(fused_wqa_wkv|wq_b|wo_a|wo_b)$"], "weights": fp8,
                        "input_activations": {"num_bits": 8, "type": "float", "dynamic": true}},
            "group_1": {"targets": ["re:.*ffn.*(gate|up|down)_proj$"], "weights": fp4,
                        "input_activations": {"num_bits": 4, "type": "float", "group_size": 16}}
        }
    });
    let m = parse_config_json(&v.to_string(), "v4-mixed").unwrap();
    let Some(CheckpointQuant::Known { weights, gemm_activations, .. }) = &m.checkpoint_quant else { panic!("{m:?}") };
    assert_eq!(weights.attention, Precision::Fp8Block { block: 128 });
    assert_eq!((weights.experts, weights.shared_experts), (Precision::NvFp4, Precision::NvFp4));
    assert_eq!(
        (weights.router, weights.embedding, weights.lm_head),
        (Precision::Bf16, Precision::Bf16, Precision::Bf16)
    );
    assert_eq!(*gemm_activations, Some(Precision::NvFp4));
    assert!(m.notes.iter().any(|n| n.contains("2 groups with schemes of their own")), "{:?}", m.notes);
}
