use llm_ledger_core::hardware::builtin_gpus;
use llm_ledger_core::tiling::{choose_tile, GemmShape};
use llm_ledger_core::{Efficiency, Precision};
use llm_ledger_report::plot::{standalone, PlotSize, TileGrid};
fn main() {
    let gpu = builtin_gpus().iter().find(|g| g.name == "h100-sxm").unwrap();
    for (name, m, n, k) in [
        ("prefill", 2048u64, 14336u64, 4096u64),
        ("decode", 1, 14336, 4096),
        ("odd", 1000, 1000, 1000),
        ("huge", 1 << 20, 16384, 4096),
        ("tall", 65536, 128, 4096),
    ] {
        let shape = GemmShape::new(m, n, k, 1, Precision::Bf16, Precision::Bf16, Precision::Bf16, false).unwrap();
        let t = choose_tile(&shape, gpu, Efficiency::default()).unwrap().best;
        let s = TileGrid { tiling: &t, title: Some(format!("{name} {m}x{n}x{k}")) }
            .svg(PlotSize { width: 800, height: 520 })
            .unwrap();
        std::fs::write(format!("/tmp/w2/{name}.svg"), standalone(&s)).unwrap();
    }
}
