//! The `models` and `gpus` listings.

use crate::human;
use crate::render::{HumanTable, Report};
use llm_ledger_core::precision::{MathFormat, Precision};
use llm_ledger_core::Catalog;
use serde::Serialize;

/// One model in the listing.
#[derive(Debug, Clone, Serialize)]
pub struct ModelRow {
    /// Preset name.
    pub name: String,
    /// Family (`model_type`).
    pub family: String,
    /// Decoder layers.
    pub layers: u64,
    /// Hidden size.
    pub hidden_size: u64,
    /// Total parameters (computed).
    pub params: u64,
    /// Parameters touched per token (computed; equals `params` for dense models).
    pub active_params: u64,
    /// Published total, where the authors give one.
    pub published_params: Option<f64>,
    /// KV-cache bytes per token at bf16, all layers, ignoring sliding windows (indexer keys at
    /// their own 8 bits; DeepSeek-V4's compressed entries per token, rounded to a byte).
    pub kv_bytes_per_token_bf16: u64,
    /// Bytes of state each sequence holds however long it is (recurrent layers' states at their
    /// precision, convolution states at bf16; 0 without recurrent layers).
    pub state_bytes_per_sequence: u64,
    /// Human name.
    pub display: String,
}

/// The `models` listing.
#[derive(Debug, Clone, Serialize)]
pub struct ModelList {
    /// Models.
    pub models: Vec<ModelRow>,
}

impl ModelList {
    /// List a catalogue's presets.
    pub fn new(c: &Catalog) -> Self {
        ModelList {
            models: c
                .presets()
                .iter()
                .map(|p| ModelRow {
                    name: p.name.clone(),
                    family: p.spec().family.clone(),
                    layers: p.spec().num_layers(),
                    hidden_size: p.spec().hidden_size,
                    params: p.spec().total_params(),
                    active_params: p.spec().active_params(),
                    published_params: p.published_params,
                    kv_bytes_per_token_bf16: p.spec().kv_bytes_per_token(Precision::Bf16).round() as u64,
                    state_bytes_per_sequence: p.spec().state_bytes_per_sequence(Precision::Bf16).round() as u64,
                    display: p.display.clone(),
                })
                .collect(),
        }
    }
}

impl Report for ModelList {
    type CsvRow = ModelRow;
    fn csv_rows(&self) -> Vec<ModelRow> {
        self.models.clone()
    }
    fn human(&self) -> HumanTable {
        HumanTable {
            header: [
                "model",
                "family",
                "layers",
                "hidden",
                "params",
                "active",
                "KV/token (bf16)",
                "state/sequence",
                "description",
            ]
                .map(String::from)
                .to_vec(),
            rows: self
                .models
                .iter()
                .map(|m| {
                    vec![
                        m.name.clone(),
                        m.family.clone(),
                        m.layers.to_string(),
                        m.hidden_size.to_string(),
                        human::params(m.params),
                        human::params(m.active_params),
                        human::bytes(m.kv_bytes_per_token_bf16 as f64),
                        if m.state_bytes_per_sequence > 0 {
                            human::bytes(m.state_bytes_per_sequence as f64)
                        } else {
                            "—".into()
                        },
                        m.display.clone(),
                    ]
                })
                .collect(),
            right_aligned: vec![2, 3, 4, 5, 6, 7],
            // On a narrow terminal the description goes first, then the family and the shape.
            priority: vec![0, 3, 2, 2, 1, 1, 1, 1, 4],
            footer: vec![
                "params are computed from the shapes (embedding + layers + untied LM head; vision towers and draft layers apart); active = per token (MoE: router, top-k and shared experts)".into(),
                "state/sequence = what a hybrid's recurrent layers hold per sequence however long it is (their state at its dtype, convolutions at bf16), beside the KV of its attention layers".into(),
            ],
            ..Default::default()
        }
    }
}

/// One GPU in the listing.
#[derive(Debug, Clone, Serialize)]
pub struct GpuRow {
    /// Identifier.
    pub name: String,
    /// Dense bf16 tensor peak, FLOP/s.
    pub bf16_flops_per_s: f64,
    /// Dense fp8 peak, FLOP/s (absent if unsupported).
    pub fp8_flops_per_s: Option<f64>,
    /// Dense int8 peak, OP/s.
    pub int8_flops_per_s: Option<f64>,
    /// Dense fp4 peak, FLOP/s.
    pub fp4_flops_per_s: Option<f64>,
    /// Memory bandwidth, bytes/s.
    pub memory_bandwidth_bytes_per_s: f64,
    /// Capacity, bytes.
    pub memory_bytes: f64,
    /// bf16 ridge point, FLOP per byte.
    pub ridge_bf16_flops_per_byte: f64,
    /// fp8 ridge point.
    pub ridge_fp8_flops_per_byte: Option<f64>,
    /// SMs / CUs.
    pub sm_count: u64,
    /// Approximate on-demand USD per GPU-hour.
    pub usd_per_gpu_hour: Option<f64>,
    /// Human name.
    pub display: String,
    /// Scale-up link (NVLink, Infinity Fabric) bandwidth per direction, bytes/s.
    pub scale_up_bandwidth_bytes_per_s: Option<f64>,
    /// GPUs in one scale-up domain.
    pub scale_up_gpus: Option<u64>,
    /// PCIe bandwidth per direction, bytes/s.
    pub pcie_bandwidth_bytes_per_s: Option<f64>,
    /// Scale-out network bandwidth per GPU and direction, bytes/s.
    pub network_bandwidth_bytes_per_s: Option<f64>,
}

/// The `gpus` listing.
#[derive(Debug, Clone, Serialize)]
pub struct GpuList {
    /// GPUs.
    pub gpus: Vec<GpuRow>,
}

impl GpuList {
    /// List a catalogue's GPUs.
    pub fn new(c: &Catalog) -> Self {
        GpuList {
            gpus: c
                .gpus()
                .iter()
                .map(|g| {
                    let p = &g.peak_flops_per_s;
                    let ic = &g.interconnect;
                    GpuRow {
                        name: g.name.clone(),
                        bf16_flops_per_s: p.bf16,
                        fp8_flops_per_s: p.fp8,
                        int8_flops_per_s: p.int8,
                        fp4_flops_per_s: p.fp4,
                        memory_bandwidth_bytes_per_s: g.memory_bandwidth_bytes_per_s,
                        memory_bytes: g.memory_bytes,
                        ridge_bf16_flops_per_byte: g.ridge_flops_per_byte(MathFormat::Bf16),
                        ridge_fp8_flops_per_byte: p.fp8.map(|_| g.ridge_flops_per_byte(MathFormat::Fp8)),
                        sm_count: g.sm_count,
                        usd_per_gpu_hour: g.usd_per_gpu_hour,
                        display: g.display.clone(),
                        scale_up_bandwidth_bytes_per_s: ic.scale_up.as_ref().map(|l| l.bandwidth_bytes_per_s),
                        scale_up_gpus: ic.scale_up.as_ref().and_then(|l| l.gpus),
                        pcie_bandwidth_bytes_per_s: ic.pcie.as_ref().map(|l| l.bandwidth_bytes_per_s),
                        network_bandwidth_bytes_per_s: ic.network.as_ref().map(|l| l.bandwidth_bytes_per_s),
                    }
                })
                .collect(),
        }
    }
}

/// `450 GB/s ×8 · PCIe 64 GB/s · net 50 GB/s`.
fn links(g: &GpuRow) -> String {
    let mut parts = Vec::new();
    if let (Some(bw), Some(n)) = (g.scale_up_bandwidth_bytes_per_s, g.scale_up_gpus) {
        parts.push(format!("{} ×{n}", human::rate(bw, "B")));
    }
    if let Some(bw) = g.pcie_bandwidth_bytes_per_s {
        parts.push(format!("PCIe {}", human::rate(bw, "B")));
    }
    if let Some(bw) = g.network_bandwidth_bytes_per_s {
        parts.push(format!("net {}", human::rate(bw, "B")));
    }
    if parts.is_empty() {
        "—".into()
    } else {
        parts.join(" · ")
    }
}

impl Report for GpuList {
    type CsvRow = GpuRow;
    fn csv_rows(&self) -> Vec<GpuRow> {
        self.gpus.clone()
    }
    fn human(&self) -> HumanTable {
        let opt = |v: Option<f64>| v.map(|v| human::sig3(v / 1e12)).unwrap_or_else(|| "—".into());
        HumanTable {
            header: ["gpu", "bf16 TFLOP/s", "fp8", "int8", "fp4", "HBM", "capacity", "ridge bf16", "ridge fp8", "SMs", "$/h ≈", "links, each way", "description"]
                .map(String::from)
                .to_vec(),
            rows: self
                .gpus
                .iter()
                .map(|g| {
                    vec![
                        g.name.clone(),
                        human::sig3(g.bf16_flops_per_s / 1e12),
                        opt(g.fp8_flops_per_s),
                        opt(g.int8_flops_per_s),
                        opt(g.fp4_flops_per_s),
                        human::rate(g.memory_bandwidth_bytes_per_s, "B"),
                        human::bytes(g.memory_bytes),
                        format!("{:.0}", g.ridge_bf16_flops_per_byte),
                        g.ridge_fp8_flops_per_byte.map(|r| format!("{r:.0}")).unwrap_or_else(|| "—".into()),
                        g.sm_count.to_string(),
                        g.usd_per_gpu_hour.map(|u| format!("{u:.2}")).unwrap_or_else(|| "—".into()),
                        links(g),
                        g.display.clone(),
                    ]
                })
                .collect(),
            right_aligned: (1..=10).collect(),
            // On a narrow terminal the description and the links go first, then the rarer formats.
            priority: vec![0, 0, 2, 3, 3, 1, 1, 2, 3, 3, 2, 4, 5],
            footer: vec![
                "dense tensor-core peaks (no 2:4 sparsity); ridge = peak ÷ bandwidth in FLOP/B; prices are approximate on-demand list prices (override with --usd-per-hour)".into(),
                "links: scale-up (NVLink, Infinity Fabric) × GPUs in its domain, PCIe, network per GPU; per direction (vendors print NVLink as the sum of both)".into(),
            ],
            ..Default::default()
        }
    }
}
