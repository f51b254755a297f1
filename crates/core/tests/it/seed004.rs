//! The reference calculator ("Decode Compute Math, in depth"), digit for digit.
//!
//! `golden/seed004_report.txt` is the output of the reference calculator's own calculator
//! (`golden/seed004_calculator.py`, copied verbatim from the seed; regenerate with
//! `python3 seed004_calculator.py > seed004_report.txt`). These tests print our ledger, under
//! seed counting, with the reference calculator's format strings and compare the text.

use llm_ledger_core::hardware::parse_gpu_file;
use llm_ledger_core::model::WeightPrecisions;
use llm_ledger_core::ops::OpKind;
use llm_ledger_core::workload::{Contexts, Counting};
use llm_ledger_core::{summarise, Catalog, Ledger, Precision, Scenario, ScenarioRequest};
use std::fmt::Write;
use std::sync::Arc;

const GOLDEN: &str = include_str!("../golden/seed004_report.txt");

/// The seed calculator's hardware: 989e12 FLOP/s peak, 3.35e12 B/s (it rounds 989.4 to 989).
fn seed_gpu() -> Arc<llm_ledger_core::Gpu> {
    let text = r#"
[[gpu]]
name = "seed-h100"
sm_count = 132
memory_bytes = 80e9
memory_bandwidth_bytes_per_s = 3.35e12
l2_bytes = 50e6
onchip = "sm90"
[gpu.peak_flops_per_s]
vector = 66.9e12
bf16 = 989e12
fp16 = 989e12
"#;
    Arc::new(parse_gpu_file(text).unwrap().remove(0))
}

fn seed_scenario(batch: u64, ctx: u64) -> Scenario {
    let mut s =
        ScenarioRequest { counting: Some("seed".into()), ..Default::default() }.resolve(&Catalog::builtin()).unwrap();
    s.gpu = seed_gpu();
    s.workload.contexts = Contexts::uniform(batch, ctx).unwrap();
    assert_eq!(s.workload.counting, Counting::Seed);
    s
}

/// The reference calculator's `report()`, printed from our ledger.
fn report(s: &Scenario) -> String {
    let l = Ledger::build(s);
    let (batch, ctx) = match &s.workload.contexts {
        Contexts::Uniform { batch, tokens } => (*batch, *tokens),
        Contexts::Mix(_) => unreachable!(),
    };
    let mut out = format!("batch={batch} ctx={ctx}\n");
    for r in &l.rows {
        let (f, b) = (r.cost.flops, r.cost.bytes());
        writeln!(out, "  {:10} {:9.1} GFLOP {:7.2} GB  intensity {:6.1}", r.op.name(), f / 1e9, b / 1e9, f / b)
            .unwrap();
    }
    let (tf, tb) = (l.summary.cost.flops, l.summary.cost.bytes());
    writeln!(out, "  total      {:9.1} GFLOP {:7.2} GB  intensity {:6.1}", tf / 1e9, tb / 1e9, tf / tb).unwrap();
    writeln!(
        out,
        "  floors: memory {:.2} ms, compute {:.2} ms",
        l.summary.memory_floor_s * 1e3,
        l.summary.compute_floor_s * 1e3
    )
    .unwrap();
    out
}

fn sweep_line(s: &Scenario) -> String {
    let t = summarise(s).step_time_s();
    let b = s.workload.contexts.batch();
    format!("{b} {} ms {} tok/s\n", (t * 1e3 * 100.0).round() / 100.0, (b as f64 / t).round())
}

#[test]
fn seed_tables_come_out_digit_for_digit() {
    let mut out = String::new();
    for (b, c) in [(1, 2048), (64, 2048), (8, 32768), (128, 2048)] {
        out += &report(&seed_scenario(b, c));
    }
    for b in [1, 8, 32, 64, 128] {
        out += &sweep_line(&seed_scenario(b, 2048));
    }
    assert_eq!(out, GOLDEN);
    assert!(GOLDEN.lines().count() > 30, "golden file is non-trivial");
}

#[test]
fn seed_rows_are_the_seed_rows() {
    let l = Ledger::build(&seed_scenario(1, 2048));
    let ops: Vec<OpKind> = l.rows.iter().map(|r| r.op).collect();
    assert_eq!(ops, [OpKind::QkvProj, OpKind::OProj, OpKind::Mlp, OpKind::Attention, OpKind::LmHead]);
}

#[test]
fn catalogue_h100_prints_the_same_seed_numbers() {
    // With the catalogue's 989.4e12 peak the printed figures are unchanged.
    for (b, c) in [(1, 2048), (64, 2048), (8, 32768), (128, 2048)] {
        let mut s = seed_scenario(b, c);
        let seed = report(&s);
        s.gpu = Catalog::builtin().gpu("h100-sxm").unwrap();
        assert_eq!(report(&s), seed);
    }
}

#[test]
fn seed_prose_figures() {
    let s1 = summarise(&seed_scenario(1, 2048));
    // "The weights read per step total 15.0 GB (excluding the embedding table)".
    assert_eq!(format!("{:.1}", s1.cost.weight_bytes / 1e9), "15.0");
    // 15,009,316,864 bytes = 32·(4096·6144 + 4096² + 3·4096·14336)·2 + 4096·128256·2.
    assert_eq!(s1.cost.weight_bytes, 15_009_316_864.0);
    // "the step reads 15.3 GB and does 16 GFLOP … memory floor … 4.6 ms … compute floor 0.02 ms".
    assert_eq!(format!("{:.1}", s1.cost.bytes() / 1e9), "15.3");
    assert_eq!(format!("{:.0}", s1.cost.flops / 1e9), "16");
    assert_eq!(format!("{:.1}", s1.memory_floor_s * 1e3), "4.6");
    // Step times 5.7 / 12.0 / 18.4 ms at batch 1 / 64 / 128, and 175 tok/s at batch 1.
    let ms = |b, c| format!("{:.1}", summarise(&seed_scenario(b, c)).step_time_s() * 1e3);
    assert_eq!(ms(1, 2048), "5.7");
    assert_eq!(ms(64, 2048), "12.0");
    assert_eq!(ms(128, 2048), "18.4");
    assert_eq!(format!("{:.0}", summarise(&seed_scenario(1, 2048)).tokens_per_s()), "175");
    // "Batch 8 at 32,768 tokens … reads the same 49.4 GB and takes the same 18.4 ms … 430 vs 6,900".
    let long = summarise(&seed_scenario(8, 32768));
    let wide = summarise(&seed_scenario(128, 2048));
    assert_eq!(format!("{:.1}", long.cost.bytes() / 1e9), "49.4");
    assert_eq!(long.cost.bytes(), wide.cost.bytes());
    assert_eq!(format!("{:.1}", long.step_time_s() * 1e3), "18.4");
    assert_eq!((long.tokens_per_s() / 10.0).round() * 10.0, 430.0);
    assert_eq!((wide.tokens_per_s() / 100.0).round() * 100.0, 6900.0);
    // "Total intensity falls to 5.2 FLOP/byte".
    assert_eq!(format!("{:.1}", long.cost.flops / long.cost.bytes()), "5.2");
}

#[test]
fn attention_intensity_is_the_gqa_group_size() {
    // 4·32·128·L FLOPs over 2·8·128·L·2 bytes = 4, for any batch and context.
    for (b, c) in [(1, 2048), (64, 2048), (8, 32768)] {
        let l = Ledger::build(&seed_scenario(b, c));
        assert_eq!(l.row(OpKind::Attention).unwrap().cost.intensity(), Some(4.0));
    }
}

fn with_weights(mut s: Scenario, p: Precision) -> Scenario {
    s.weights = WeightPrecisions::uniform(p);
    s
}

#[test]
fn seed_levers_fp8_kv_and_w4a16() {
    let ms = |s: &Scenario| format!("{:.1}", summarise(s).step_time_s() * 1e3);
    let fp8kv = |mut s: Scenario| {
        s.workload.kv = Precision::Fp8;
        s
    };
    // "batch 8 at 32k drops from 18.4 ms to 12.0 ms per step; batch 64 at 2k drops from 12.0 ms to 8.8 ms".
    assert_eq!(ms(&fp8kv(seed_scenario(8, 32768))), "12.0");
    assert_eq!(ms(&fp8kv(seed_scenario(64, 2048))), "8.8");
    // "batch 1 drops from 5.7 ms to about 1.5 ms … At batch 64 … from 12.0 ms to 8.0 ms".
    assert_eq!(ms(&with_weights(seed_scenario(1, 2048), Precision::Int4)), "1.5");
    assert_eq!(ms(&with_weights(seed_scenario(64, 2048), Precision::Int4)), "8.0");
    // fp8 KV doubles attention intensity to 8.
    let l = Ledger::build(&fp8kv(seed_scenario(8, 32768)));
    assert_eq!(l.row(OpKind::Attention).unwrap().cost.intensity(), Some(8.0));
}
