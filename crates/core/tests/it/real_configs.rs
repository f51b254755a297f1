//! Every real `config.json` in `tests/data/configs/` (published by the model authors; provenance,
//! byte counts and checksums in `tests/data/configs/SOURCES.md`) parses, with the parameter counts
//! computed in `shared/research/architectures.md`, and every preset with a reference config equals
//! it.
//!
//! The files are part of the repository, so these tests run on every clone; none of them can pass
//! by skipping (`configs_dir` asserts the directory holds every listed config).

use llm_ledger_core::model::{builtin_presets, parse_config_json, ModelSpec};
use std::path::{Path, PathBuf};

/// The vendored configs, one folder per model (`<dir>/config.json`).
fn configs_dir() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/configs");
    let found = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter(|e| e.as_ref().is_ok_and(|e| e.path().join("config.json").is_file()))
        .count();
    assert!(found >= PUBLISHED.len(), "{} holds {found} configs, expected {}", dir.display(), PUBLISHED.len());
    dir
}

fn parse(dir: &Path, name: &str) -> ModelSpec {
    let text = std::fs::read_to_string(dir.join(name).join("config.json")).unwrap();
    parse_config_json(&text, name).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// (directory, total parameters, active parameters) from architectures.md, "computed ✓" columns.
const PUBLISHED: &[(&str, u64, Option<u64>)] = &[
    ("Llama-3.1-8B", 8_030_261_248, None),
    ("Llama-3.1-70B", 70_553_706_496, None),
    ("Llama-3.1-405B", 405_853_388_800, None),
    ("Llama-3.2-1B-Instruct", 1_235_814_400, None),
    ("Llama-3.2-3B-Instruct", 3_212_749_824, None),
    ("Qwen2.5-7B-Instruct", 7_615_616_512, None),
    ("Qwen3-8B", 8_190_735_360, None),
    ("Phi-3-mini-128k-instruct", 3_821_079_552, None),
    ("phi-4", 14_659_507_200, None),
    ("gemma-3-27b-it-reserialized", 27_009_346_304, None),
    // MoE: active counts are architectures.md's "3.353 B", "12.88 B" … (with embeddings).
    ("Mixtral-8x7B-v0.1", 46_702_792_704, Some(12_880_000_000)),
    ("Mixtral-8x22B-v0.1", 140_620_634_112, Some(39_150_000_000)),
    ("Qwen3-30B-A3B", 30_532_122_624, Some(3_353_000_000)),
    ("Qwen3-30B-A3B-FP8", 30_532_122_624, Some(3_353_000_000)),
    ("Qwen3-235B-A22B", 235_093_634_560, Some(22_190_000_000)),
    ("DeepSeek-V3", 671_026_419_200, Some(37_550_000_000)),
    ("DeepSeek-R1", 671_026_419_200, Some(37_550_000_000)),
    ("gpt-oss-20b", 20_914_757_184, Some(4_187_000_000)),
    ("gpt-oss-120b", 116_829_156_672, Some(5_712_000_000)),
    // 2025 dense families read by `architectures`-named families of their own (SmolLM3's
    // NoPE layers, OLMo 3's and EXAONE 4's sliding layers, Ministral 3): totals from the shapes,
    // against the published labels 3.08B (tied), 32B, 32.0B, 123B and 24B (with a 0.4B
    // vision tower the text model leaves out), each within 2 %.
    ("SmolLM3-3B", 3_075_098_624, None),
    ("Olmo-3.1-32B-Instruct", 32_233_522_176, None),
    ("EXAONE-4.0-32B", 32_003_216_384, None),
    ("Devstral-2-123B-Instruct-2512", 125_025_988_608, None),
    ("Devstral-Small-2-24B-Instruct-2512", 23_572_403_200, None),
];

#[test]
fn every_real_config_parses_with_the_published_parameter_count() {
    let dir = configs_dir();
    let mut seen = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if !path.join("config.json").is_file() {
            continue;
        }
        let name = path.file_name().unwrap().to_str().unwrap().to_string();
        let (_, total, active) = PUBLISHED
            .iter()
            .find(|(d, _, _)| *d == name)
            .unwrap_or_else(|| panic!("{name}: add its published parameter count to PUBLISHED"));
        let spec = parse(&dir, &name);
        assert_eq!(spec.total_params(), *total, "{name} total");
        if let Some(active) = active {
            let got = spec.active_params() as f64;
            // Published to 3-4 significant figures.
            assert!((got - *active as f64).abs() / (*active as f64) < 5e-4, "{name} active {got}");
        } else {
            assert_eq!(spec.active_params(), spec.total_params(), "{name} is dense");
        }
        seen += 1;
    }
    assert_eq!(seen, PUBLISHED.len(), "every listed config was found");
}

#[test]
fn gpt_oss_active_counts_in_openais_convention() {
    // OpenAI's active counts exclude the input embedding: 3.61 B (20b) and 5.13 B (120b).
    let dir = configs_dir();
    for (name, published) in [("gpt-oss-20b", 3.61e9), ("gpt-oss-120b", 5.13e9)] {
        let s = parse(&dir, name);
        let active = (s.active_params() - s.embedding.vocab * s.embedding.dim) as f64;
        assert!((active - published).abs() / published < 2e-3, "{name}: {active}");
    }
}

#[test]
fn presets_equal_the_authors_configs() {
    let dir = configs_dir();
    let mut checked = 0;
    for p in builtin_presets() {
        let Some(reference) = &p.reference_config else {
            continue;
        };
        let real = parse(&dir, reference);
        assert!(p.spec().same_shape(&real), "{} differs from {reference}:\n{:#?}\nvs\n{:#?}", p.name, p.spec(), real);
        assert_eq!(p.spec().checkpoint_quant, real.checkpoint_quant, "{}", p.name);
        checked += 1;
    }
    assert!(checked >= 14, "only {checked} presets have a reference config");
}

#[test]
fn crlf_line_endings_parse_the_same() {
    // phi-4 was published with CRLF line endings (SOURCES.md note 4).
    let dir = configs_dir();
    let text = std::fs::read_to_string(dir.join("phi-4/config.json")).unwrap();
    let crlf = text.replace("\r\n", "\n").replace('\n', "\r\n");
    let a = parse_config_json(&text, "phi-4").unwrap();
    let b = parse_config_json(&crlf, "phi-4").unwrap();
    assert!(a.same_shape(&b));
}

#[test]
fn gemma3_nested_text_config_has_five_local_layers_per_global() {
    let dir = configs_dir();
    let s = parse(&dir, "gemma-3-27b-it-reserialized");
    let windows: Vec<Option<u64>> = s
        .layers()
        .iter()
        .map(|l| match &l.attention {
            llm_ledger_core::model::Attention::Standard(a) => a.reach.window(),
            _ => unreachable!(),
        })
        .collect();
    assert_eq!(windows.iter().filter(|w| w.is_none()).count(), 10);
    assert_eq!(windows[5], None);
    assert_eq!(windows[0], Some(1024));
}

#[test]
fn every_real_config_gives_a_ledger_a_sweep_and_a_zoom() {
    use llm_ledger_core::scenario::{Catalog, ScenarioRequest};
    use llm_ledger_core::sweep::{Axis, Sweep};
    use llm_ledger_core::zoom::ZoomTree;
    use llm_ledger_core::Ledger;
    let dir = configs_dir();
    for (name, _, _) in PUBLISHED {
        let mut c = Catalog::builtin();
        c.add_model(parse(&dir, name));
        for phase in ["decode", "prefill"] {
            let req = ScenarioRequest {
                model: Some(name.to_string()),
                gpu: Some("b200".into()),
                phase: Some(phase.into()),
                batch: Some("4".into()),
                ctx: Some("1024".into()),
                ..Default::default()
            };
            let sc = req.resolve(&c).unwrap_or_else(|e| panic!("{name}: {e}"));
            let l = Ledger::build(&sc);
            assert!(l.summary.step_time_s() > 0.0 && l.summary.step_time_s().is_finite(), "{name}");
            let tree = ZoomTree::build(&sc);
            for path in ["model", "layer.0", "layer.0.mlp"] {
                let node = tree.node(path).unwrap_or_else(|e| panic!("{name} {path}: {e}"));
                assert!(node.addup.exact, "{name} {phase} {path} must add up exactly");
            }
            // The zoom's step (the model, the layer stack, and the rest beside it) is the ledger's
            // total.
            assert!(tree.step.exact, "{name} {phase}: {:?}", tree.step);
            assert_eq!(tree.step.step.cost.flops, l.summary.cost.flops, "{name}");
            let sweep =
                Sweep::new(sc, Axis::parse("batch", "1,8,64", 1, 64).unwrap(), Axis::single(1024), 2e9).unwrap();
            let mut weights = Vec::new();
            sweep.run(|p| {
                weights.push(p.weight_bytes);
                std::ops::ControlFlow::Continue(())
            });
            assert_eq!(weights.len(), 3);
            if phase == "decode" && parse(&dir, name).is_moe() {
                assert!(
                    weights[0] < weights[1] && weights[1] < weights[2],
                    "{name}: MoE union grows with batch {weights:?}"
                );
            }
        }
    }
}

#[test]
fn every_vendored_config_has_the_size_its_sources_table_records() {
    // SOURCES.md lists each file's source, commit, sha256 and byte count; the byte count catches a
    // truncated copy or converted line endings (phi-4 is CRLF).
    let dir = configs_dir();
    let sources = std::fs::read_to_string(dir.join("SOURCES.md")).unwrap();
    let mut checked = 0;
    for line in sources.lines().filter(|l| l.starts_with("| `")) {
        let cells: Vec<&str> = line.trim_matches('|').split('|').map(str::trim).collect();
        let name = cells[0].split('`').nth(1).unwrap();
        let bytes: u64 = cells.last().unwrap().parse().unwrap_or_else(|e| panic!("{name}: {e}"));
        let len = std::fs::metadata(dir.join(name).join("config.json")).unwrap().len();
        assert_eq!(len, bytes, "{name}: {len} bytes, SOURCES.md says {bytes}");
        checked += 1;
    }
    assert_eq!(checked, PUBLISHED.len(), "every vendored config has a SOURCES.md row");
    assert!(checked >= 19);
}

#[test]
fn quantised_real_configs_keep_their_weight_storage() {
    // (dir, method, expert weight format, weight bytes): the authors' own quantised configs, with
    // no quantisation note. Qwen3-30B-A3B-FP8 stores q/k/v/o in fp8 (its unconverted list names
    // only norms, routers and lm_head): 905,748,480 bytes fewer than with bf16 attention.
    use llm_ledger_core::memory::WeightFootprint;
    use llm_ledger_core::model::CheckpointQuant;
    use llm_ledger_core::precision::Precision;
    let dir = configs_dir();
    let fp8 = Precision::Fp8Block { block: 128 };
    let cases = [
        ("Qwen3-30B-A3B-FP8", "fp8", fp8, 31_174_545_408.0),
        ("DeepSeek-V3", "fp8", fp8, 673_150_575_280.0),
        ("DeepSeek-R1", "fp8", fp8, 673_150_575_280.0),
        ("gpt-oss-20b", "mxfp4", Precision::MxFp4, 13_761_264_768.0),
        ("gpt-oss-120b", "mxfp4", Precision::MxFp4, 65_248_815_744.0),
    ];
    for (name, method, format, bytes) in cases {
        let s = parse(&dir, name);
        let Some(CheckpointQuant::Known { method: m, weights, .. }) = &s.checkpoint_quant else {
            panic!("{name}: {:?}", s.checkpoint_quant)
        };
        assert_eq!(m, method, "{name}");
        assert_eq!(weights.experts, format, "{name}");
        assert_eq!(weights.lm_head, Precision::Bf16, "{name}");
        let got = WeightFootprint::of(&s, weights).total_bytes();
        assert_eq!(got, bytes, "{name} weight bytes");
        assert!(!s.notes.iter().any(|n| n.contains("quantization_config")), "{name}: {:?}", s.notes);
    }
}

#[test]
fn every_quantised_config_stores_each_class_as_its_checkpoint_does() {
    use llm_ledger_core::model::CheckpointQuant;
    use llm_ledger_core::Precision::{self, Bf16, Fp8, Fp8Block, MxFp4};
    let dir = configs_dir();
    // (config, attention, dense MLP, experts, shared experts): what the checkpoint's
    // safetensors hold (the FP8 Qwen stores q/k/v/o in fp8 and lists only norms, routers and
    // lm_head as unconverted; gpt-oss lists `model.layers.*.self_attn`).
    let b128 = Fp8Block { block: 128 };
    // Devstral 2 is FP8 per tensor (`quant_method: fp8` without a block size), its vision tower,
    // projector and LM head unconverted.
    let cases: [(&str, [Precision; 4]); 7] = [
        ("DeepSeek-V3", [b128, b128, b128, b128]),
        ("DeepSeek-R1", [b128, b128, b128, b128]),
        ("Qwen3-30B-A3B-FP8", [b128, b128, b128, b128]),
        ("gpt-oss-20b", [Bf16, Bf16, MxFp4, Bf16]),
        ("gpt-oss-120b", [Bf16, Bf16, MxFp4, Bf16]),
        ("Devstral-2-123B-Instruct-2512", [Fp8, Fp8, Fp8, Fp8]),
        ("Devstral-Small-2-24B-Instruct-2512", [Fp8, Fp8, Fp8, Fp8]),
    ];
    let mut quantised = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        if !dir.join(&name).join("config.json").is_file() {
            continue;
        }
        let spec = parse(&dir, &name);
        let Some(CheckpointQuant::Known { weights: w, .. }) = &spec.checkpoint_quant else { continue };
        quantised += 1;
        let (_, expected) = cases.iter().find(|(n, _)| *n == name).unwrap_or_else(|| panic!("{name}: add its case"));
        assert_eq!([w.attention, w.mlp, w.experts, w.shared_experts], *expected, "{name}");
        // Routers, the embedding and the LM head stay 16-bit in every one of them.
        assert_eq!([w.router, w.embedding, w.lm_head], [Bf16; 3], "{name}");
        assert!(spec.notes.iter().all(|n| !n.contains("unquantised")), "{name}: {:?}", spec.notes);
    }
    assert_eq!(quantised, cases.len(), "every quantised config is checked");
}
