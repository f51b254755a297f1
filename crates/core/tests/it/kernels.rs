//! The measured-kernel tables (`core::kernels`): every embedded file parses and
//! agrees with `manifest.toml`; lookups are exact at measured points, lie between their
//! neighbours, grow with m; physics cross-checks; `None` where there is no data.
//!
//! Reference values were read independently of the Rust reader, with a 20-line Python decoder of
//! the format (`scripts/kernel-data/README.md`: code `c` → `0.001 · exp(c / 2048)` µs); the code
//! is written next to each value so the arithmetic can be redone by hand.

use llm_ledger_core::hardware::{builtin_gpus, Gpu};
use llm_ledger_core::kernels::{
    self, allreduce_us, attention_us, decode_us, embedded_files, gemm_axes, gemm_envelope_us, gemm_us, mla_bmm_us,
    mla_us, nccl_us, AttentionPhase, AttentionQuery, AttnDtype, Collective, Engine, EngineVersion, GemmDtype,
    KernelGpu, KernelTable, MlaBmm, MlaQuery, Tables,
};
use proptest::prelude::*;

const H100: KernelGpu = KernelGpu::H100Sxm;
const TRT: Engine = Engine::Trtllm;
const BF16: GemmDtype = GemmDtype::Bf16;

/// Llama-3-8B attention per GPU at TP 1: 32 heads, 8 KV heads, head_dim 128, bf16.
use llm_ledger_core::testing::llama_attention as llama;

fn rel(a: f64, b: f64) -> f64 {
    (a - b).abs() / b.abs()
}

#[test]
fn every_embedded_file_parses_and_matches_the_manifest() {
    let text = include_str!("../../data/kernels/manifest.toml");
    let manifest: toml::Table = toml::from_str(text).unwrap();
    let files = manifest["file"].as_array().unwrap();
    assert_eq!(files.len(), 650);
    assert_eq!(embedded_files().len(), files.len(), "every manifest file is embedded, and no other");
    let (mut total_bytes, mut stored_bytes) = (0, 0);
    for entry in files {
        let path = entry["file"].as_str().unwrap();
        let f = embedded_files().iter().find(|f| f.path == path).unwrap_or_else(|| panic!("{path} not embedded"));
        assert_eq!(entry["stored"].as_str().unwrap(), format!("{path}.zst"));
        assert_eq!(f.gpu.dir(), entry["gpu"].as_str().unwrap(), "{path}");
        assert_eq!(f.op_name(), entry["op"].as_str().unwrap(), "{path}");
        assert_eq!(f.version, entry["engine_version"].as_str().unwrap(), "{path}");
        let engine = entry["engine"].as_str().unwrap();
        match f.engine {
            Some(e) => {
                assert_eq!(e.as_str(), engine, "{path}");
                // The default version's files sit in `<gpu>/<engine>/`, the others' in `<gpu>/<engine>@<version>/`.
                let dir = if f.default {
                    format!("{}/{e}/", f.gpu.dir())
                } else {
                    format!("{}/{e}@{}/", f.gpu.dir(), f.version)
                };
                assert!(path.starts_with(&dir), "{path}");
                let defaults = &manifest["engine_versions"][f.gpu.dir()][engine];
                assert_eq!(f.default, defaults.as_str() == Some(f.version), "{path}");
            }
            None => assert_eq!(engine, "nccl", "{path}"),
        }
        let stats = f.stats().unwrap_or_else(|e| panic!("{path}: {e}"));
        assert_eq!(stats.measured as i64, entry["rows"].as_integer().unwrap(), "{path}: measured values = rows");
        assert_eq!(stats.tables as i64, entry["tables"].as_integer().unwrap(), "{path}: tables");
        assert_eq!(stats.bytes as i64, entry["bytes"].as_integer().unwrap(), "{path}: bytes");
        assert_eq!(stats.stored_bytes as i64, entry["stored_bytes"].as_integer().unwrap(), "{path}: stored bytes");
        assert!(stats.measured <= stats.cells, "{path}");
        total_bytes += stats.bytes;
        stored_bytes += stats.stored_bytes;
    }
    // 45.1 MB of tables embedded as 22.1 MB: the release binary stays below 45 MB.
    assert_eq!((total_bytes, stored_bytes), (45_132_127, 22_095_502));
}

#[test]
fn a_named_engine_version_reads_the_nearest_measured_at_or_below_it() {
    let v = |s: &str| EngineVersion::parse(s);
    let vllm = Engine::Vllm;
    // vLLM on the H100: own tables at 0.14.0, 0.19.0 and 0.24.0 (the default); 0.22.0 shares
    // 0.24.0's (its reuse.yaml).
    assert_eq!(Tables::held_versions(H100, vllm), ["0.14.0", "0.19.0", "0.22.0", "0.24.0"]);
    assert_eq!(Tables::at(H100, vllm, None).unwrap(), Tables::newest(H100, vllm));
    assert_eq!(Tables::newest(H100, vllm).version, "0.24.0");
    let at = |s: &str| Tables::at(H100, vllm, v(s)).unwrap();
    assert_eq!(at("0.24.0"), Tables::newest(H100, vllm));
    assert_eq!(at("0.30").version, "0.24.0", "above the newest: the newest");
    for (asked, version, gemm) in [
        ("0.19", "0.19.0", "0.19.0"),
        ("0.21.3", "0.19.0", "0.19.0"),
        ("0.22", "0.22.0", "0.24.0"),
        ("0.14", "0.14.0", "0.14.0"),
    ] {
        let t = at(asked);
        assert_eq!((t.version, t.version_of(KernelTable::Gemm)), (version, Some(gemm)), "vllm@{asked}");
        assert_eq!(t.version_of(KernelTable::Attention), Some(gemm), "vllm@{asked}: attention from the same version");
    }
    // Another version's table holds other measurements: the 0.19.0 and 0.24.0 GEMMs differ.
    let (old, new) = (at("0.19"), Tables::newest(H100, vllm));
    let differ = [1.0, 16.0, 256.0, 4096.0]
        .iter()
        .filter(|&&m| gemm_us(old, BF16, m, 4096.0, 4096.0) != gemm_us(new, BF16, m, 4096.0, 4096.0))
        .count();
    assert!(differ >= 2, "{differ}");
    // Below every version measured on the GPU: refused, naming them.
    let err = Tables::at(H100, vllm, v("0.10")).unwrap_err().to_string();
    assert!(
        err.contains("`engine`") && err.contains("0.14.0, 0.19.0, 0.22.0, 0.24.0") && err.contains("h100_sxm"),
        "{err}"
    );
    // Every family of every version's tables comes from one measured version (both attention
    // phases, both MLA phases): the time source names one version per table.
    for gpu in KernelGpu::ALL {
        for engine in gpu.engines() {
            for held in Tables::held_versions(gpu, *engine) {
                let t = Tables::at(gpu, *engine, v(held)).unwrap();
                assert!(t.any(), "{gpu:?} {engine} {held}");
                for table in KernelTable::ALL {
                    let read = t.versions_of(table);
                    assert!(read.len() <= 1, "{gpu:?} {engine}@{held} {table:?}: {read:?}");
                }
            }
        }
    }
}

#[test]
fn decoding_follows_the_format() {
    // code 0 = 0.001 µs; 2048 = 0.001 · e; 0xFFFF = not measured.
    assert_eq!(decode_us(0), Some(0.001));
    assert!(rel(decode_us(2048).unwrap(), 0.001 * std::f64::consts::E) < 1e-15);
    assert_eq!(decode_us(0xFFFF), None);
}

#[test]
fn exact_at_measured_points() {
    // (query, code read by the Python decoder); value = 0.001 · exp(code / 2048) µs.
    let cases: [(Option<f64>, u16); 9] = [
        // h100 trtllm bf16 GEMM 8192³: code 28990 → 0.001 · e^14.155… = 1404.61 µs.
        (gemm_us(Tables::newest(H100, TRT), BF16, 8192.0, 8192.0, 8192.0), 28990),
        // m = 1, n = k = 8192: code 22125 → 49.18 µs.
        (gemm_us(Tables::newest(H100, TRT), BF16, 1.0, 8192.0, 8192.0), 22125),
        (gemm_us(Tables::newest(H100, TRT), BF16, 4096.0, 4096.0, 4096.0), 24716),
        (gemm_us(Tables::newest(H100, TRT), BF16, 16.0, 6144.0, 4096.0), 20514),
        // Llama-3-8B decode attention, bs 1 / 8 / 64 at step 2047: 13.91, 43.34, 193.46 µs.
        (attention_us(Tables::newest(H100, TRT), &llama(AttentionPhase::Generation, 1.0, 2047.0)), 19539),
        (attention_us(Tables::newest(H100, TRT), &llama(AttentionPhase::Generation, 8.0, 2047.0)), 21866),
        (attention_us(Tables::newest(H100, TRT), &llama(AttentionPhase::Generation, 64.0, 2047.0)), 24930),
        // Prefill, bs 1 × isl 2048: 124.54 µs.
        (attention_us(Tables::newest(H100, TRT), &llama(AttentionPhase::Context, 1.0, 2048.0)), 24028),
        // NCCL all-reduce on 8 GPUs, 1,048,576 half elements = 2 MiB: 38.62 µs.
        (nccl_us(H100, Collective::AllReduce, 8, 2.0 * 1_048_576.0), 21630),
    ];
    for (i, (got, code)) in cases.into_iter().enumerate() {
        let want = 0.001 * (f64::from(code) / 2048.0).exp();
        assert_eq!(got, Some(want), "case {i}: bit for bit the decoded code {code}");
    }
    // The same by hand for the first: 28990 / 2048 = 14.1552734375; e^14.1552734375 = 1,404,614.5;
    // × 0.001 = 1404.61 µs.
    assert!(rel(cases_first(), 1404.614488) < 1e-8);
}

fn cases_first() -> f64 {
    gemm_us(Tables::newest(H100, TRT), BF16, 8192.0, 8192.0, 8192.0).unwrap()
}

#[test]
fn kernel_data_readme_example_numbers() {
    // scripts/kernel-data/README.md: a100 trtllm generation attention, bs 64 at step 2047, is
    // "188.9 µs" per layer (× 32 layers = 6.0 ms). Python decoder: code 24881 → 188.891 µs.
    let a100 = KernelGpu::A100Sxm;
    let v = attention_us(Tables::newest(a100, TRT), &llama(AttentionPhase::Generation, 64.0, 2047.0)).unwrap();
    assert_eq!(format!("{v:.1}"), "188.9");
    assert_eq!(format!("{:.1}", v * 32.0 / 1000.0), "6.0");
    // "bs = 128 × isl 2048 is not measured" for a100 trtllm context attention: the rule for
    // unmeasured corners still gives a number, from the nearest measured cells, above bs 64's.
    let bs64 = attention_us(Tables::newest(a100, TRT), &llama(AttentionPhase::Context, 64.0, 2048.0)).unwrap();
    let bs128 = attention_us(Tables::newest(a100, TRT), &llama(AttentionPhase::Context, 128.0, 2048.0)).unwrap();
    assert!(bs128 > bs64, "{bs128} > {bs64}");
    // Within the physical bound: twice the work of bs 64 costs at most ~4× (the isl² scaling
    // from a measured cell at half the length), never less than bs 64.
    assert!(bs128 < 4.5 * bs64, "{bs128} vs {bs64}");
}

#[test]
fn big_gemm_runs_at_60_to_90_percent_of_h100_peak() {
    // 8192³ bf16: 2 · 8192³ = 1.0995e12 FLOP. H100 SXM dense bf16 peak 989 TFLOP/s:
    // 60 % → 1.853 ms, 90 % → 1.235 ms. Measured 1404.6 µs → 782.8 TFLOP/s = 79 %.
    let t_s = gemm_us(Tables::newest(H100, TRT), BF16, 8192.0, 8192.0, 8192.0).unwrap() * 1e-6;
    let flops = 2.0 * 8192f64.powi(3);
    let achieved = flops / t_s / 989e12;
    assert!((0.60..=0.90).contains(&achieved), "{achieved}");
    // Every engine's kernel, the same band.
    for e in Engine::ALL {
        let t_s = gemm_us(Tables::newest(H100, e), BF16, 8192.0, 8192.0, 8192.0).unwrap() * 1e-6;
        let achieved = flops / t_s / 989e12;
        assert!((0.60..=0.92).contains(&achieved), "{e}: {achieved}");
    }
}

#[test]
fn decode_gemv_runs_near_h100_bandwidth() {
    // m = 1, n = k = 8192 bf16: the weights dominate, 8192 · 8192 · 2 = 134,217,728 bytes.
    // At 3.35 TB/s: 50 % → 80.1 µs, 95 % → 42.2 µs. Measured 49.18 µs → 2.73 TB/s = 81 %.
    let t_s = gemm_us(Tables::newest(H100, TRT), BF16, 1.0, 8192.0, 8192.0).unwrap() * 1e-6;
    let bytes = 8192.0 * 8192.0 * 2.0;
    let achieved = bytes / t_s / 3.35e12;
    assert!((0.50..=0.95).contains(&achieved), "{achieved}");
}

#[test]
fn between_grid_points_log_space() {
    // n = 28672 (Llama-3-8B gate+up) lies between the grid's 16384 and 51200: the log-space
    // rule, t = t₀^(1−w) · t₁^w with w = ln(28672/16384) / ln(51200/16384).
    let (m, k) = (64.0, 4096.0);
    let t0 = gemm_us(Tables::newest(H100, TRT), BF16, m, 16384.0, k).unwrap();
    let t1 = gemm_us(Tables::newest(H100, TRT), BF16, m, 51200.0, k).unwrap();
    let w = (28672f64 / 16384.0).ln() / (51200f64 / 16384.0).ln();
    let want = t0.powf(1.0 - w) * t1.powf(w);
    let got = gemm_us(Tables::newest(H100, TRT), BF16, m, 28672.0, k).unwrap();
    assert!(rel(got, want) < 1e-12, "{got} vs {want}");
    assert!(t0 < got && got < t1);
}

#[test]
fn outside_the_grid() {
    // Above the largest m (32768): linear in m from the last point.
    let last = gemm_us(Tables::newest(H100, TRT), BF16, 32768.0, 4096.0, 4096.0).unwrap();
    let beyond = gemm_us(Tables::newest(H100, TRT), BF16, 262144.0, 4096.0, 4096.0).unwrap();
    assert!(rel(beyond, 8.0 * last) < 1e-12);
    // Above the largest n (65536), e.g. Llama-3's vocabulary 128256: linear in n.
    let last = gemm_us(Tables::newest(H100, TRT), BF16, 1.0, 65536.0, 4096.0).unwrap();
    let beyond = gemm_us(Tables::newest(H100, TRT), BF16, 1.0, 128256.0, 4096.0).unwrap();
    assert!(rel(beyond, last * 128256.0 / 65536.0) < 1e-12);
    // Below the smallest n (32): the smallest point's value.
    let first = gemm_us(Tables::newest(H100, TRT), BF16, 1.0, 32.0, 4096.0).unwrap();
    assert_eq!(gemm_us(Tables::newest(H100, TRT), BF16, 1.0, 8.0, 4096.0), Some(first));
    // Prefill attention beyond isl 16384: ×(L / L_max)² from the largest measured length.
    let q = |l| llama(AttentionPhase::Context, 1.0, l);
    let at = attention_us(Tables::newest(H100, TRT), &q(16384.0)).unwrap();
    let beyond = attention_us(Tables::newest(H100, TRT), &q(65536.0)).unwrap();
    assert!(rel(beyond, at * 16.0) < 1e-12, "{beyond} vs 16 × {at}");
    // Non-positive or non-finite sizes: no number.
    for bad in [0.0, -1.0, f64::NAN, f64::INFINITY] {
        assert_eq!(gemm_us(Tables::newest(H100, TRT), BF16, bad, 4096.0, 4096.0), None);
        assert_eq!(attention_us(Tables::newest(H100, TRT), &llama(AttentionPhase::Generation, 1.0, bad)), None);
    }
}

#[test]
fn heads_between_measured_layouts() {
    // 40 heads with 8 KV heads is measured on h100 trtllm context attention; 36 / 8 is not: it
    // lies between 32 / 8 and 40 / 8 in log space.
    let mut q = llama(AttentionPhase::Context, 4.0, 4096.0);
    let at = |q: &AttentionQuery| attention_us(Tables::newest(H100, TRT), q).unwrap();
    let t32 = at(&q);
    q.heads = 40.0;
    let t40 = at(&q);
    q.heads = 36.0;
    let t36 = at(&q);
    let w = (36f64 / 32.0).ln() / (40f64 / 32.0).ln();
    assert!(rel(t36, t32.powf(1.0 - w) * t40.powf(w)) < 1e-12);
    // KV heads 6 (not measured) with the group size 4 kept: between 4 KV (16 heads) and 8 KV
    // (32 heads), so between those two times.
    q.heads = 24.0;
    q.kv_heads = 6.0;
    let t = at(&q);
    let (mut lo, mut hi) = (q, q);
    (lo.heads, lo.kv_heads, hi.heads, hi.kv_heads) = (16.0, 4.0, 32.0, 8.0);
    let (a, b) = (at(&lo), at(&hi));
    assert!(a.min(b) <= t && t <= a.max(b), "{a} ≤ {t} ≤ {b}");
}

#[test]
fn sliding_window() {
    // A window at least as long as the sequence is full attention.
    let full = llama(AttentionPhase::Generation, 8.0, 2047.0);
    let mut win = full;
    win.window = 4096;
    assert_eq!(attention_us(Tables::newest(H100, TRT), &win), attention_us(Tables::newest(H100, TRT), &full));
    // Decode with a window shorter than the cache reads `window` tokens.
    win.window = 1000;
    let mut short = full;
    short.length = 1000.0;
    assert_eq!(attention_us(Tables::newest(H100, TRT), &win), attention_us(Tables::newest(H100, TRT), &short));
    // Prefill at L = 8192, w = 2048: the band's share 2w/L − (w/L)² = 0.5 − 0.0625 = 0.4375.
    let full = llama(AttentionPhase::Context, 1.0, 8192.0);
    let mut win = full;
    win.window = 2048;
    let ratio = attention_us(Tables::newest(H100, TRT), &win).unwrap()
        / attention_us(Tables::newest(H100, TRT), &full).unwrap();
    assert!(rel(ratio, 0.4375) < 1e-12, "{ratio}");
}

#[test]
fn none_where_there_is_no_data() {
    // GPUs: the catalogue entries that name their tables; others (AMD, L4, PCIe cards) have none.
    let catalogue: Vec<&Gpu> = builtin_gpus().iter().map(|g| &**g).collect();
    let with_tables: Vec<(&str, KernelGpu)> =
        catalogue.iter().filter_map(|c| Some((c.name.as_str(), KernelGpu::for_gpu(c)?))).collect();
    assert_eq!(
        with_tables,
        [
            ("a100-80gb-sxm", KernelGpu::A100Sxm),
            ("h100-sxm", H100),
            ("h200", KernelGpu::H200Sxm),
            ("b200", KernelGpu::B200Sxm),
            ("gb200", KernelGpu::Gb200),
            ("l40s", KernelGpu::L40s),
            ("b300", KernelGpu::B300Sxm),
            ("gb300", KernelGpu::Gb300),
            ("rtx-pro-6000", KernelGpu::RtxPro6000Server),
            ("b60", KernelGpu::B60),
        ]
    );
    for dir in ["h100-sxm", "H100_SXM", "mi300x", ""] {
        assert_eq!(KernelGpu::from_dir(dir), None, "{dir}");
    }
    // Every GPU with tables is named by one catalogue entry.
    for g in KernelGpu::ALL {
        assert_eq!(with_tables.iter().filter(|(_, k)| *k == g).count(), 1, "{g:?}");
    }
    // A user's GPU file that reuses a catalogue name with other figures gets none.
    let mut user = (*catalogue.iter().find(|c| c.name == "h100-sxm").unwrap()).clone();
    user.memory_bandwidth_bytes_per_s *= 1.1;
    assert_eq!(KernelGpu::for_gpu(&user), None);
    // Formats a GPU/engine was not measured in.
    assert_eq!(gemm_us(Tables::newest(KernelGpu::A100Sxm, TRT), GemmDtype::Fp8, 64.0, 4096.0, 4096.0), None);
    assert_eq!(gemm_us(Tables::newest(H100, TRT), GemmDtype::Nvfp4, 64.0, 4096.0, 4096.0), None);
    assert!(gemm_us(Tables::newest(KernelGpu::B200Sxm, TRT), GemmDtype::Nvfp4, 64.0, 4096.0, 4096.0).is_some());
    assert!(gemm_us(Tables::newest(KernelGpu::A100Sxm, TRT), GemmDtype::Int4WeightOnly, 64.0, 4096.0, 4096.0).is_some());
    // A head_dim never measured.
    let mut q = llama(AttentionPhase::Generation, 1.0, 1023.0);
    q.head_dim = 80;
    assert_eq!(attention_us(Tables::newest(H100, TRT), &q), None);
    // vLLM 0.24.0 measured no MLA core on the H100 (0.14.0's table, another kernel, is not read
    // for it); the Arc Pro B60 has none at any version. More than 8 GPUs leaves the node.
    let mla = MlaQuery {
        phase: AttentionPhase::Generation,
        dtype: AttnDtype::Bf16,
        kv_dtype: AttnDtype::Bf16,
        heads: 16.0,
        batch: 8.0,
        length: 4095.0,
    };
    assert_eq!(mla_us(Tables::newest(H100, Engine::Vllm), &mla), None);
    assert_eq!(Tables::newest(H100, Engine::Vllm).version_of(KernelTable::Mla), None);
    assert!(mla_us(Tables::at(H100, Engine::Vllm, EngineVersion::parse("0.14")).unwrap(), &mla).is_some());
    assert_eq!(mla_us(Tables::newest(KernelGpu::B60, Engine::Vllm), &mla), None);
    assert!(mla_us(Tables::newest(H100, TRT), &mla).is_some());
    assert_eq!(nccl_us(H100, Collective::AllReduce, 16, 1e6), None);
    assert_eq!(allreduce_us(Tables::newest(H100, TRT), 16, 1e6), None);
}

#[test]
fn engines_parse_with_the_typed_error() {
    for e in Engine::ALL {
        assert_eq!(e.to_string().parse::<Engine>().unwrap(), e);
    }
    assert_eq!("TensorRT-LLM".parse::<Engine>().unwrap(), Engine::Trtllm);
    let err = "tgi".parse::<Engine>().unwrap_err();
    assert_eq!(err.to_string(), "unknown engine `tgi`; accepted: trtllm, vllm, sglang");
    assert_eq!(err.accepted().unwrap(), ["trtllm", "vllm", "sglang"]);
    assert_eq!(err.field(), Some("engine"));
}

#[test]
fn collectives() {
    // One GPU: nothing to communicate.
    assert_eq!(allreduce_us(Tables::newest(H100, TRT), 1, 1e6), Some(0.0));
    // trtllm's custom all-reduce on 8 GPUs, 2 MiB of bf16 = 1,048,576 elements (a measured size).
    let custom = allreduce_us(Tables::newest(H100, TRT), 8, 2.0 * 1_048_576.0).unwrap();
    let nccl = nccl_us(H100, Collective::AllReduce, 8, 2.0 * 1_048_576.0).unwrap();
    assert!(custom > 0.0 && nccl > 0.0);
    // l40s vllm has no custom all-reduce table: NCCL stands in.
    let l40s = KernelGpu::L40s;
    assert_eq!(allreduce_us(Tables::newest(l40s, Engine::Vllm), 4, 1e6), nccl_us(l40s, Collective::AllReduce, 4, 1e6));
    // 6 GPUs lies between 4 and 8.
    let (t4, t6, t8) = (
        nccl_us(H100, Collective::AllGather, 4, 1e7).unwrap(),
        nccl_us(H100, Collective::AllGather, 6, 1e7).unwrap(),
        nccl_us(H100, Collective::AllGather, 8, 1e7).unwrap(),
    );
    assert!(t4.min(t8) <= t6 && t6 <= t4.max(t8));
    // Every op on every GPU answers for a mid-size message over 4 GPUs (GB200 and GB300 were
    // measured on a 4-GPU tray, the B60 on 4 cards); oneCCL's table on the B60 has no all-to-all.
    for g in KernelGpu::ALL {
        for op in [Collective::AllGather, Collective::AllReduce, Collective::AllToAll, Collective::ReduceScatter] {
            let measured = !(g == KernelGpu::B60 && op == Collective::AllToAll);
            assert_eq!(nccl_us(g, op, 4, 1e6).is_some(), measured, "{g:?} {op:?}");
        }
    }
    // Above the GPUs measured, no table: the link model times it.
    assert_eq!(nccl_us(KernelGpu::Gb200, Collective::AllGather, 8, 1e6), None);
    assert!(nccl_us(KernelGpu::B300Sxm, Collective::AllGather, 8, 1e6).is_some());
}

#[test]
fn every_gpu_and_engine_answers_the_common_queries() {
    for g in KernelGpu::ALL {
        for e in Engine::ALL {
            if !g.engines().contains(&e) {
                // No kernel of an engine not measured on the GPU.
                assert_eq!(gemm_us(Tables::newest(g, e), BF16, 128.0, 4096.0, 4096.0), None, "{g:?} {e}");
                continue;
            }
            let gemm = gemm_us(Tables::newest(g, e), BF16, 128.0, 4096.0, 4096.0);
            assert!(gemm.is_some_and(|v| v > 0.0), "{g:?} {e}");
            for phase in [AttentionPhase::Context, AttentionPhase::Generation] {
                let v = attention_us(Tables::newest(g, e), &llama(phase, 8.0, 1024.0));
                assert!(v.is_some_and(|v| v > 0.0), "{g:?} {e} {phase:?}");
            }
            assert!(allreduce_us(Tables::newest(g, e), 2, 1e6).is_some(), "{g:?} {e}");
        }
    }
    // MLA batched matmuls.
    let v = mla_bmm_us(Tables::newest(H100, TRT), MlaBmm::Pre, AttnDtype::Bf16, 16.0, 64.0);
    assert!(v.is_some_and(|v| v > 0.0));
    assert!(kernels::SOURCE.contains("095f58a5"));
}

/// The raw table is not monotone in m even where the GPU is full (m ≥ 4096): run-to-run noise
/// and tile quantisation make a bigger GEMM measure faster by up to a third at thin shapes
/// (n 10240, k 64: 33 %). So the clock reads the envelope: at every measured (n, k) and on a
/// fine m grid (1 % steps from 4096 to 65536), it never decreases, never exceeds the raw time
/// (padding to more rows is always possible), and equals it where the table already grows.
#[test]
fn at_large_m_the_envelope_grows_and_the_raw_table_does_not() {
    let [ms, ns, ks] = grid();
    let mut worst_raw_dip: f64 = 0.0;
    for &n in ns {
        for &k in ks {
            let (mut raw_max, mut env_prev) = (0.0f64, 0.0f64);
            let mut m = 4096.0f64;
            while m <= 65536.0 {
                let raw = gemm_us(Tables::newest(H100, TRT), BF16, m, n, k).unwrap();
                let env = gemm_envelope_us(Tables::newest(H100, TRT), BF16, m, n, k).unwrap();
                assert!(env >= env_prev * (1.0 - 1e-12), "n {n} k {k} m {m}: {env} after {env_prev}");
                assert!(env <= raw * (1.0 + 1e-12), "n {n} k {k} m {m}: envelope {env} above raw {raw}");
                worst_raw_dip = worst_raw_dip.max(1.0 - raw / raw_max.max(raw));
                (raw_max, env_prev) = (raw_max.max(raw), env);
                m *= 1.01;
            }
        }
    }
    assert!(worst_raw_dip > 0.2, "the raw table dips {worst_raw_dip}: is the envelope still needed?");
    // Where the measured times grow with m, the envelope is the measurement.
    let last = *ms.last().unwrap();
    let (n, k) = (8192.0, 8192.0);
    for m in [8192.0, 16384.0, last] {
        assert_eq!(
            gemm_envelope_us(Tables::newest(H100, TRT), BF16, m, n, k),
            gemm_us(Tables::newest(H100, TRT), BF16, m, n, k),
            "m {m}"
        );
    }
}

/// The h100 trtllm bf16 grid, for the properties.
fn grid() -> [&'static [f64]; 3] {
    gemm_axes(Tables::newest(H100, TRT), BF16).unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// The envelope never decreases with m, at any m (on or between grid points, below and above
    /// the grid), any (n, k) on or off the grid, on every GPU and engine with a bf16 table (at
    /// grid points it is the brute-force minimum: the next test).
    #[test]
    fn envelope_grows_with_m_and_never_exceeds_the_table(
        gi in 0usize..5, ei in 0usize..3, a in 0.0f64..17.0, b in 0.0f64..17.0, n in 32.0f64..70000.0, k in 32.0f64..70000.0
    ) {
        let gpu = KernelGpu::ALL[gi];
        let engine = Engine::ALL[ei];
        let (lo, hi) = (a.min(b).exp2(), a.max(b).exp2());
        let (Some(t_lo), Some(t_hi)) = (gemm_envelope_us(Tables::newest(gpu, engine), BF16, lo, n, k), gemm_envelope_us(Tables::newest(gpu, engine), BF16, hi, n, k)) else {
            return Ok(());
        };
        prop_assert!(t_hi >= t_lo * (1.0 - 1e-12), "{gpu:?} {engine}: m {lo} → {t_lo}, m {hi} → {t_hi}");
    }

    /// Between two neighbouring grid values of any axis, the value lies between the two
    /// neighbours' values, and on a grid point it is that point's value.
    #[test]
    fn between_neighbours(mi in 0usize..74, ni in 0usize..22, ki in 0usize..22, axis in 0usize..3, t in 0.0f64..1.0) {
        let g = grid();
        let mut at = [g[0][mi.min(g[0].len() - 1)], g[1][ni.min(g[1].len() - 1)], g[2][ki.min(g[2].len() - 1)]];
        let idx = [mi, ni, ki][axis].min(g[axis].len() - 2);
        let (x0, x1) = (g[axis][idx], g[axis][idx + 1]);
        at[axis] = x0;
        let v0 = gemm_us(Tables::newest(H100, TRT), BF16, at[0], at[1], at[2]).unwrap();
        at[axis] = x1;
        let v1 = gemm_us(Tables::newest(H100, TRT), BF16, at[0], at[1], at[2]).unwrap();
        at[axis] = (x0.ln() + t * (x1.ln() - x0.ln())).exp().clamp(x0, x1);
        let v = gemm_us(Tables::newest(H100, TRT), BF16, at[0], at[1], at[2]).unwrap();
        let (lo, hi) = (v0.min(v1), v0.max(v1));
        prop_assert!(lo * (1.0 - 1e-12) <= v && v <= hi * (1.0 + 1e-12), "{lo} ≤ {v} ≤ {hi} at {at:?}");
    }
}

#[test]
fn envelope_is_the_minimum_over_larger_m_at_measured_points() {
    // H200 trtllm bf16, n 768, k 2048 (a launch-bound shape whose raw times fall with m): at each
    // grid m the envelope is the smallest raw value at that m or above, computed here by brute
    // force over the grid; at the top of the grid it is the raw value.
    let g = KernelGpu::H200Sxm;
    let [ms, _, _] = gemm_axes(Tables::newest(g, TRT), BF16).unwrap();
    let raw: Vec<f64> = ms.iter().map(|&m| gemm_us(Tables::newest(g, TRT), BF16, m, 768.0, 2048.0).unwrap()).collect();
    assert!(raw[0] > raw[4], "the shape is chosen because its raw times fall: {raw:?}");
    for (i, &m) in ms.iter().enumerate() {
        let want = raw[i..].iter().copied().fold(f64::INFINITY, f64::min);
        assert_eq!(gemm_envelope_us(Tables::newest(g, TRT), BF16, m, 768.0, 2048.0).unwrap(), want, "m {m}");
    }
    // Where the raw table grows from there on (H100, the QKV GEMM of Llama 3 8B at m = 8192), unchanged.
    assert_eq!(
        gemm_envelope_us(Tables::newest(H100, TRT), BF16, 8192.0, 6144.0, 4096.0),
        gemm_us(Tables::newest(H100, TRT), BF16, 8192.0, 6144.0, 4096.0)
    );
}

#[test]
fn aiconfigurator_own_breakdown_h100_llama_8b_decode() {
    // AIConfigurator 0.12.0's estimate for Llama-3.1-8B on h100_sxm, trtllm, TP 1, static batch 1,
    // isl 2048, osl 2 (../shared/research/peers-aiconfigurator/…h100_sxm_static_bs1…SILICON.txt),
    // generation phase, 32 layers: qkv_gemm 0.707 ms, proj_gemm 0.530 ms, attention 0.444 ms,
    // all "[silicon]" (read from these tables). Our lookups × 32 layers, to its 3 decimals.
    let layers = 32.0;
    let ms = |us: f64| format!("{:.3}", us * layers / 1000.0);
    // QKV: n = (32 + 2 · 8) · 128 = 6144, k = 4096.
    assert_eq!(ms(gemm_us(Tables::newest(H100, TRT), BF16, 1.0, 6144.0, 4096.0).unwrap()), "0.707");
    assert_eq!(ms(gemm_us(Tables::newest(H100, TRT), BF16, 1.0, 4096.0, 4096.0).unwrap()), "0.530");
    let attn = attention_us(Tables::newest(H100, TRT), &llama(AttentionPhase::Generation, 1.0, 2048.0)).unwrap();
    assert!(rel(attn * layers / 1000.0, 0.444) < 0.01, "{}", ms(attn));
}

/// A step of continuous batching runs its decodes and its prompt chunks as two attention kernels:
/// the generation kernel at the decodes' count and mean cached length, the context kernel at the
/// chunks' count and the length whose causal triangle holds their pairs.
#[test]
fn a_mixed_step_times_its_decodes_and_its_chunks_as_two_measured_kernels() {
    use llm_ledger_core::workload::Chunk;
    let sc = llm_ledger_core::testing::scenario(&[("model", "llama-3-8b"), ("gpu", "h100-sxm"), ("engine", "trtllm")]);
    let decodes = [Chunk { new_tokens: 1, cached_tokens: 1000 }, Chunk { new_tokens: 1, cached_tokens: 3000 }];
    let prompts = [Chunk { new_tokens: 512, cached_tokens: 0 }, Chunk { new_tokens: 512, cached_tokens: 0 }];
    let chunks: Vec<Chunk> = decodes.iter().chain(&prompts).copied().collect();
    let step = sc.with_workload(sc.workload.with_chunks(chunks.into()));
    let l = llm_ledger_core::Ledger::build(&step);
    let r = l.row(llm_ledger_core::ops::OpKind::Attention).unwrap();
    let at = |phase, batch: f64, length: f64| {
        attention_us(Tables::newest(KernelGpu::H100Sxm, Engine::Trtllm), &llama(phase, batch, length)).unwrap() * 1e-6
    };
    // Decodes: 1001 and 3001 positions read, a mean of 2000 cached tokens; prompts: 512 each.
    let want = at(AttentionPhase::Generation, 2.0, 2000.0) + at(AttentionPhase::Context, 2.0, 512.0);
    let got = r.timing.time_s / r.instances as f64;
    assert!((got / want - 1.0).abs() < 1e-9, "{got} vs {want}");
    // Each part alone is less than the two together.
    assert!(want > at(AttentionPhase::Context, 2.0, 512.0));
}

/// MLA's absorbed decode is the engine's measured MLA generation kernel at this GPU's query heads,
/// the step's sequences and their cached tokens, never below its latent-cache bytes at the
/// achievable bandwidth.
#[test]
fn mla_decode_attention_is_the_measured_mla_kernel() {
    use llm_ledger_core::ops::OpKind;
    for (batch, ctx) in [(1u64, 1000u64), (32, 4096)] {
        let sc = llm_ledger_core::testing::scenario(&[
            ("model", "deepseek-v3"),
            ("gpu", "h200"),
            ("engine", "trtllm"),
            ("tp", "8"),
            ("batch", &batch.to_string()),
            ("ctx", &ctx.to_string()),
        ]);
        let l = llm_ledger_core::Ledger::build(&sc);
        let r = l.row(OpKind::Attention).unwrap();
        let q = MlaQuery {
            phase: AttentionPhase::Generation,
            dtype: AttnDtype::Bf16,
            kv_dtype: AttnDtype::Bf16,
            heads: 128.0 / 8.0,
            batch: batch as f64,
            length: ctx as f64,
        };
        let table_s = mla_us(Tables::newest(KernelGpu::H200Sxm, Engine::Trtllm), &q).unwrap() * 1e-6;
        let floor_s = r.cost.bytes() / r.instances as f64 / (4.8e12 * (4.01 / 4.8));
        let got = r.timing.time_s / r.instances as f64;
        assert!(
            (got / table_s.max(floor_s) - 1.0).abs() < 1e-9,
            "batch {batch}: {got} vs table {table_s}, floor {floor_s}"
        );
    }
}

#[test]
fn mla_batched_matmuls_never_get_faster_with_more_tokens() {
    for gpu in KernelGpu::ALL {
        for &engine in gpu.engines() {
            let t = Tables::newest(gpu, engine);
            for (op, dtype, heads) in [MlaBmm::Pre, MlaBmm::Post]
                .into_iter()
                .flat_map(|op| [AttnDtype::Bf16, AttnDtype::Fp8].map(|d| (op, d)))
                .flat_map(|(op, d)| [1.0, 2.0, 16.0, 128.0].map(|h| (op, d, h)))
            {
                let mut last = 0.0;
                for tokens in (1..=512).map(f64::from) {
                    let Some(us) = mla_bmm_us(t, op, dtype, heads, tokens) else { break };
                    assert!(
                        us >= last,
                        "{gpu:?} {engine} {op:?} {dtype:?} {heads} heads: {tokens} tokens {us} µs < {last}"
                    );
                    last = us;
                }
            }
        }
    }
}
