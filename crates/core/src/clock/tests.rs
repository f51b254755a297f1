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
    let cost =
        Cost { flops: g.flops(), weight_bytes: g.weight_bytes(), activation_bytes: g.activation_bytes(), ..Cost::ZERO };
    Op { gemm: Some(g), ..Op::plain(OpKind::GateProj, cost, MathFormat::Bf16) }
}

#[test]
fn a_gemm_on_a_catalogue_gpu_with_a_measured_engine_takes_the_tables_time() {
    let h100 = gpu("h100-sxm");
    let model = Measured::new(Engine::Trtllm, Phase::Decode, h100);
    assert_eq!(model.tables, Some((KernelGpu::H100Sxm, kernels::Engine::Trtllm)));
    let op = gate_proj(8.0);
    let table_us =
        kernels::gemm_envelope_us(KernelGpu::H100Sxm, kernels::Engine::Trtllm, GemmDtype::Bf16, 8.0, 14336.0, 4096.0)
            .unwrap();
    let t = model.op_time(&op, h100, Efficiency::default());
    // Exactly the table's time (its envelope in m), nothing added; the roofs stay the fitted
    // model's.
    assert_eq!(t.time_s, table_us * 1e-6);
    let fitted = Measured { tables: None, ..model }.op_time(&op, h100, Efficiency::default());
    assert_eq!((t.compute_s, t.memory_s), (fitted.compute_s, fitted.memory_s));
    assert_ne!(t.time_s, fitted.time_s);
    // Instances multiply (MoE experts).
    let mut experts = op;
    experts.gemm = Some(crate::gemm::Gemm { instances: 2.5, ..op.gemm.unwrap() });
    assert_eq!(model.op_time(&experts, h100, Efficiency::default()).time_s, table_us * 1e-6 * 2.5);
}

#[test]
fn no_tables_for_user_gpus_gpt_fast_eager_or_merged_gemms() {
    let h100 = gpu("h100-sxm");
    // A user's GPU file: same name, other figures: the fitted model.
    let mut user = h100.clone();
    user.memory_bandwidth_bytes_per_s *= 1.1;
    let m = Measured::new(Engine::Trtllm, Phase::Decode, &user);
    assert_eq!(m.tables, None);
    let fitted = Measured { tables: None, ..Measured::new(Engine::Trtllm, Phase::Decode, h100) };
    let op = gate_proj(8.0);
    let (c, mem, extra) = m.roofs(&op, &user);
    let expected = kernel_time_s(Engine::Trtllm, c.max(mem) + extra);
    assert_eq!(m.op_time(&op, &user, Efficiency::default()).time_s, expected);
    // Engines without measured kernels.
    assert_eq!(Measured::new(Engine::GptFast, Phase::Decode, h100).tables, None);
    assert_eq!(Measured::new(Engine::Eager, Phase::Decode, h100).tables, None);
    // A GEMM the engine merges into the previous one keeps its marginal roofs.
    let model = Measured::new(Engine::Trtllm, Phase::Decode, h100);
    let up = Op { kind: OpKind::UpProj, ..op };
    assert_eq!(model.op_time(&up, h100, Efficiency::default()), fitted.op_time(&up, h100, Efficiency::default()));
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
