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
