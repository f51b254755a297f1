use super::*;
use crate::hardware::builtin_gpus;
use crate::precision::Precision;

fn gpu(name: &str) -> &'static Gpu {
    builtin_gpus().iter().find(|g| g.name == name).unwrap()
}

#[test]
fn w4a16_loses_its_edge_over_bf16_as_the_batch_grows() {
    // Llama 3 8B's gate_proj (4096 × 14336) on an H100: 4-bit weights win at batch 1 and lose
    // once the dequantisation of every M tile outweighs the bytes saved.
    let h100 = gpu("h100-sxm");
    let b = w4a16_crossover_batch(h100, Engine::Trtllm, 14336, 4096, Precision::Int4, 4096).expect("crosses");
    assert!((64..=1024).contains(&b), "crossover at batch {b}");
    assert_eq!(w4a16_crossover_batch(h100, Engine::Trtllm, 14336, 4096, Precision::Int4, b - 1), None);
}

#[test]
fn shape_efficiency_counts_padding_and_waves() {
    // 132 tiles of 128 × 128 on 132 SMs: one full wave.
    assert_eq!(gemm_shape_efficiency(128.0, 132.0 * 128.0, 4096.0, 1.0, 132), 1.0);
    // 133 tiles: a second wave with one CTA: 133 / 264.
    assert!((gemm_shape_efficiency(128.0, 133.0 * 128.0, 4096.0, 1.0, 132) - 133.0 / 264.0).abs() < 1e-12);
    // m = 8 pads to a 16-row tile.
    assert!((gemm_shape_efficiency(8.0, 132.0 * 128.0, 4096.0, 1.0, 132) - 8.0 / 16.0).abs() < 1e-12);
    // 8 tiles on 132 SMs split K 16 ways (k = 4096): 128 CTAs in one wave.
    assert!((gemm_shape_efficiency(16.0, 8.0 * 128.0, 4096.0, 1.0, 132) - 128.0 / 132.0).abs() < 1e-12);
}

#[test]
fn eager_kernels_wait_for_the_host_and_graphs_pay_a_fixed_gap() {
    assert_eq!(kernel_time_s(Engine::Eager, 1e-6), HOST_LAUNCH_S);
    assert_eq!(kernel_time_s(Engine::Trtllm, 1e-6), 1e-6 + GRAPH_KERNEL_S);
    assert_eq!(kernel_time_s(Engine::Eager, 1e-3), 1e-3 + GRAPH_KERNEL_S);
}

/// Llama 3 8B's gate_proj at batch 8 on one GPU, bf16.
fn gate_proj(m: f64) -> Op {
    use crate::cost::Cost;
    use crate::gemm::Gemm;
    let g = Gemm::new(m, 14336, 4096, Precision::Bf16, Precision::Bf16);
    let cost = Cost {
        flops: g.flops(),
        weight_bytes: g.weight_bytes(),
        activation_bytes: g.activation_bytes(),
        activation_written_bytes: g.output_bytes(),
        ..Cost::ZERO
    };
    Op { gemm: Some(g), ..Op::plain(OpKind::GateProj, cost, MathFormat::Bf16) }
}

#[test]
fn a_gemm_on_a_catalogue_gpu_with_a_measured_engine_takes_the_tables_time() {
    let h100 = gpu("h100-sxm");
    let model = Measured::new(Clock::measured(Engine::Trtllm), Phase::Decode, h100);
    assert_eq!(model.tables, Some(kernels::Tables::newest(KernelGpu::H100Sxm, kernels::Engine::Trtllm)));
    let op = gate_proj(8.0);
    let table_us = kernels::gemm_envelope_us(
        Tables::newest(KernelGpu::H100Sxm, kernels::Engine::Trtllm),
        GemmDtype::Bf16,
        8.0,
        14336.0,
        4096.0,
    )
    .unwrap();
    let t = model.op_time(&op, h100, Efficiency::default());
    // Exactly the table's time (its envelope in m), nothing added; the roofs stay the fitted
    // model's.
    assert_eq!(t.time_s, table_us * 1e-6);
    let fitted = Measured { tables: None, ..model }.op_time(&op, h100, Efficiency::default());
    assert_eq!((t.compute_s, t.memory_s), (fitted.compute_s, fitted.memory_s));
    assert_ne!(t.time_s, fitted.time_s);
    // The routed experts run in a grouped fused-MoE kernel the tables do not hold: the fitted
    // model's grouped GEMM, one kernel (not one launch per expert).
    let experts = Op { kind: OpKind::ExpertGate, ..op };
    let fitted = Measured { tables: None, ..model }.op_time(&experts, h100, Efficiency::default());
    assert_eq!(model.op_time(&experts, h100, Efficiency::default()), fitted);
    let mut two = experts;
    two.gemm = Some(crate::gemm::Gemm { instances: 2.0, m: 4.0, ..op.gemm.unwrap() });
    two.cost.weight_bytes *= 2.0;
    let t2 = model.op_time(&two, h100, Efficiency::default()).time_s;
    assert!(t2 < 2.0 * fitted.time_s, "one fixed cost, not two: {t2} vs {}", fitted.time_s);
}

#[test]
fn mla_absorption_is_one_batched_matmul_from_its_table() {
    // DeepSeek-V3's q_absorb at batch 4 on one H200: 128 heads of [4 × 128]·[128 × 512].
    let h200 = gpu("h200");
    let model = Measured::new(Clock::measured(Engine::Trtllm), Phase::Decode, h200);
    let g = crate::gemm::Gemm::new(4.0 * 128.0, 512, 128, Precision::Bf16, Precision::Bf16).split(128.0);
    let cost = crate::cost::Cost { flops: g.flops(), weight_bytes: g.weight_bytes(), ..crate::cost::Cost::ZERO };
    let op = Op { gemm: Some(g), ..Op::plain(OpKind::QAbsorb, cost, MathFormat::Bf16) };
    let us = kernels::mla_bmm_us(
        Tables::newest(KernelGpu::H200Sxm, kernels::Engine::Trtllm),
        kernels::MlaBmm::Pre,
        kernels::AttnDtype::Bf16,
        128.0,
        4.0,
    )
    .unwrap();
    assert_eq!(model.op_time(&op, h200, Efficiency::default()).time_s, us * 1e-6);
    assert!(us < 50.0, "one kernel, not 128: {us} µs");
}

#[test]
fn merged_gemm_parts_are_charged_their_column_share_of_one_kernel() {
    // gate and up of Llama 3 8B at batch 8 as one [8 × 4096]·[4096 × 28672] GEMM: each half.
    let h100 = gpu("h100-sxm");
    let model = Measured::new(Clock::measured(Engine::Trtllm), Phase::Decode, h100);
    let gate = Op { merge_n: Some(2 * 14336), ..gate_proj(8.0) };
    let up = Op { kind: OpKind::UpProj, ..gate };
    assert_eq!(engine_join(Engine::Trtllm, &gate), Join::Part { first: true, share: 0.5 });
    assert_eq!(engine_join(Engine::Trtllm, &up), Join::Part { first: false, share: 0.5 });
    let whole_us = kernels::gemm_envelope_us(
        Tables::newest(KernelGpu::H100Sxm, kernels::Engine::Trtllm),
        GemmDtype::Bf16,
        8.0,
        28672.0,
        4096.0,
    )
    .unwrap();
    for part in [gate, up] {
        let t = model.op_time(&part, h100, Efficiency::default());
        assert_eq!(t.time_s, whole_us * 1e-6 * 0.5);
        // Its weights and output, and half of the one read of the shared input.
        let input = 8.0 * 4096.0 * 2.0;
        assert_eq!(t.hbm_bytes, part.cost.bytes() - input / 2.0);
    }
    // gpt-fast keeps gate and up apart; eager merges nothing; a lone up (GPT-2) is its own kernel.
    assert_eq!(engine_join(Engine::GptFast, &up), Join::Own);
    assert_eq!(engine_join(Engine::Eager, &gate), Join::Own);
    assert_eq!(engine_join(Engine::Trtllm, &Op { merge_n: None, ..up }), Join::Own);
}

#[test]
fn no_tables_for_user_gpus_gpt_fast_eager_or_merged_gemms() {
    let h100 = gpu("h100-sxm");
    // A user's GPU file: same name, other figures: the fitted model.
    let mut user = h100.clone();
    user.memory_bandwidth_bytes_per_s *= 1.1;
    let m = Measured::new(Clock::measured(Engine::Trtllm), Phase::Decode, &user);
    assert_eq!(m.tables, None);
    let fitted = Measured { tables: None, ..Measured::new(Clock::measured(Engine::Trtllm), Phase::Decode, h100) };
    let op = gate_proj(8.0);
    let (c, mem, extra) = m.roofs(&op, op.cost.bytes(), &user);
    let expected = kernel_time_s(Engine::Trtllm, c.max(mem) + extra);
    assert_eq!(m.op_time(&op, &user, Efficiency::default()).time_s, expected);
    // Engines without measured kernels.
    assert_eq!(Measured::new(Clock::measured(Engine::GptFast), Phase::Decode, h100).tables, None);
    assert_eq!(Measured::new(Clock::measured(Engine::Eager), Phase::Decode, h100).tables, None);
    let model = Measured::new(Clock::measured(Engine::Trtllm), Phase::Decode, h100);
    // A format without a table (int4 weights on H100): the fitted model.
    let mut w4 = op;
    w4.gemm = Some(crate::gemm::Gemm { weight: Precision::Int4, ..op.gemm.unwrap() });
    assert_eq!(model.op_time(&w4, h100, Efficiency::default()), fitted.op_time(&w4, h100, Efficiency::default()));
}

#[test]
fn gemm_formats_map_to_their_tables() {
    assert_eq!(gemm_dtype(Precision::Bf16, MathFormat::Bf16), Some(GemmDtype::Bf16));
    assert_eq!(gemm_dtype(Precision::Fp16, MathFormat::Fp16), Some(GemmDtype::Bf16));
    assert_eq!(gemm_dtype(Precision::Fp8, MathFormat::Fp8), Some(GemmDtype::Fp8));
    assert_eq!(gemm_dtype(Precision::Int4, MathFormat::Bf16), Some(GemmDtype::Int4WeightOnly));
    assert_eq!(gemm_dtype(Precision::Int8, MathFormat::Bf16), Some(GemmDtype::Int8WeightOnly));
    assert_eq!(gemm_dtype(Precision::Int8, MathFormat::Int8), Some(GemmDtype::SmoothQuant));
    // fp8 weights computed in bf16 (a GPU without fp8 tensor cores): no table.
    assert_eq!(gemm_dtype(Precision::Fp8, MathFormat::Bf16), None);
    assert_eq!(gemm_dtype(Precision::Fp32, MathFormat::Fp32), None);
}
