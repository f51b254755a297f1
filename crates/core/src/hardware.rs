//! GPUs: dense peaks per math format, memory bandwidth and capacity, and the on-chip limits the
//! tiling model needs. The built-in catalogue is `crates/core/data/gpus.toml`, embedded at compile time; a
//! user's file has the same schema.
//!
//! Ridge point of a math format = peak FLOP/s ÷ memory bandwidth (FLOP per byte): operators whose
//! arithmetic intensity is below it are memory-bound on this GPU (the reference calculator: rule 3).

use crate::error::integer_in;
use crate::error::{Error, Result};
use crate::limits;
use crate::precision::MathFormat;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};

/// The embedded catalogue, as written (the source of truth; the tests read it).
#[cfg(test)]
pub(crate) const BUILTIN_GPUS_TOML: &str = include_str!("../data/gpus.toml");
/// The same catalogue as JSON, written by `build.rs` at build time, which a run reads.
const BUILTIN_GPUS_JSON: &str = include_str!(concat!(env!("OUT_DIR"), "/gpus.json"));

/// Dense peak FLOP/s per math format. `None` means the hardware has no such tensor-core path.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PeakFlops {
    /// Non-tensor fp32 (CUDA cores / vector ALUs): elementwise ops and fp32 GEMMs without TF32.
    pub vector: f64,
    /// TF32 tensor-core peak (informational; fp32 GEMMs are costed at `vector`, PyTorch's default).
    #[serde(default)]
    pub tf32: Option<f64>,
    /// bf16 tensor-core peak with fp32 accumulate.
    pub bf16: f64,
    /// fp16 tensor-core peak with fp32 accumulate.
    pub fp16: f64,
    /// fp8 tensor-core peak.
    #[serde(default)]
    pub fp8: Option<f64>,
    /// int8 tensor-core peak (OP/s).
    #[serde(default)]
    pub int8: Option<f64>,
    /// fp4 tensor-core peak.
    #[serde(default)]
    pub fp4: Option<f64>,
}

/// On-chip limits of one SM (CU), per compute capability (CUDA C++ Programming Guide, table 27).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OnChip {
    /// Largest shared-memory carve-out per SM, bytes.
    pub smem_per_sm_bytes: u64,
    /// Largest shared memory one block may opt in to, bytes (per-SM max minus 1 KiB reserved).
    pub smem_per_block_bytes: u64,
    /// Supported shared-memory carve-outs, KiB.
    pub smem_carveouts_kib: Vec<u64>,
    /// 32-bit registers per SM.
    pub registers_per_sm: u64,
    /// Resident warps (wavefronts) per SM.
    pub max_warps_per_sm: u64,
    /// Resident thread blocks per SM.
    pub max_blocks_per_sm: u64,
    /// Threads per warp (32 on NVIDIA, 64 on AMD CDNA).
    pub warp_size: u64,
    /// Dense 16-bit tensor FLOPs per SM clock ÷ shared-memory bytes per SM clock (128 B: 32 banks
    /// × 4 B): the FLOP per shared-memory byte a GEMM tile needs to keep the tensor cores fed
    /// (H100 4,096 / 128 = 32). 0 (the default) leaves the shared-memory feed out of the tile model.
    #[serde(default)]
    pub tensor_flops_per_smem_byte: f64,
}

/// Achievable fractions of a GPU's datasheet peaks, measured: what the measured clock
/// ([`crate::clock`]) reaches where it has no kernel table. The catalogue's profiles
/// (`[achievable.*]` in `crates/core/data/gpus.toml`) cite each measurement beside its value.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Achievable {
    /// Achievable fraction of HBM bandwidth (STREAM copy ÷ datasheet).
    pub bandwidth: f64,
    /// Achievable fraction of the 16-bit tensor peak (best-shape matmul ÷ datasheet).
    pub bf16: f64,
    /// Achievable fraction of the 8-bit tensor peak.
    pub fp8: f64,
    /// Achievable fraction of the 4-bit tensor peak.
    pub fp4: f64,
    /// Achieved fraction of the 16-bit peak by prefill attention (FlashAttention-2 forward).
    pub attention_prefill: f64,
}

impl Achievable {
    /// Achievable fraction of the peak of `math`: 8-bit tensor formats at [`Achievable::fp8`],
    /// 4-bit at [`Achievable::fp4`], everything else (16-bit tensor, vector) at
    /// [`Achievable::bf16`].
    pub fn peak_fraction(&self, math: MathFormat) -> f64 {
        match math {
            MathFormat::Fp8 | MathFormat::Int8 => self.fp8,
            MathFormat::Fp4 => self.fp4,
            _ => self.bf16,
        }
    }
}

/// A profile of achievable fractions in a GPU file: the fractions and where they come from.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AchievableProfile {
    bandwidth: f64,
    bf16: f64,
    fp8: f64,
    /// Optional: without it, 4-bit math at the 8-bit fraction.
    #[serde(default)]
    fp4: Option<f64>,
    attention_prefill: f64,
    #[serde(default)]
    sources: String,
}

impl AchievableProfile {
    fn fractions(&self) -> Achievable {
        Achievable {
            bandwidth: self.bandwidth,
            bf16: self.bf16,
            fp8: self.fp8,
            fp4: self.fp4.unwrap_or(self.fp8),
            attention_prefill: self.attention_prefill,
        }
    }
}

/// `achievable` in the file: a profile name or an inline table.
#[derive(Deserialize)]
#[serde(untagged)]
enum AchievableRef {
    Profile(String),
    Inline(AchievableProfile),
}

/// A GPU as the ledger sees it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Gpu {
    /// Lower-case identifier (`h100-sxm`).
    pub name: String,
    /// Other accepted names.
    pub aliases: Vec<String>,
    /// Human-readable name.
    pub display: String,
    /// Streaming multiprocessors (compute units on AMD).
    pub sm_count: u64,
    /// Memory capacity, bytes (vendor label).
    pub memory_bytes: f64,
    /// Peak memory bandwidth, bytes per second.
    pub memory_bandwidth_bytes_per_s: f64,
    /// L2 (last-level) cache, bytes.
    pub l2_bytes: f64,
    /// Dense peaks.
    pub peak_flops_per_s: PeakFlops,
    /// On-chip limits.
    pub onchip: OnChip,
    /// Approximate on-demand price, USD per GPU-hour (volatile; the user can override it).
    pub usd_per_gpu_hour: Option<f64>,
    /// GPU-to-GPU links (all absent in a file that does not list them: one GPU only).
    pub interconnect: Interconnect,
    /// Provenance of the numbers.
    pub sources: String,
    /// Achievable fractions of the peaks (the catalogue's profile, or `default`).
    #[serde(skip)]
    pub achievable: Achievable,
    /// Where the achievable fractions come from.
    #[serde(skip)]
    pub achievable_sources: String,
    /// The measured kernel tables' folder (`h100_sxm`), built-in entries only.
    #[serde(skip)]
    pub kernel_tables: Option<String>,
}

/// One kind of GPU-to-GPU link, as seen by one GPU.
///
/// `bandwidth_bytes_per_s` is **per direction**: vendors print NVLink as the bidirectional sum
/// (H100 "900 GB/s" is 450 GB/s each way; `shared/research/hardware.md` §2), PCIe Gen5 x16
/// "128 GB/s" is 64 GB/s each way. `latency_s` is the per-hop (per ring step) latency of a
/// collective over this link: NCCL's own cost model (`src/graph/tuning.cc`, `hwLat`, ring, LL
/// protocol) uses 0.6 µs for NVLink, 1.0 µs for PCIe and 2.7 µs for the network.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Link {
    /// What it is (`NVLink 4`, `PCIe Gen5 x16`, `InfiniBand NDR 400 Gb/s`).
    pub name: String,
    /// Bandwidth per GPU, per direction, bytes per second.
    pub bandwidth_bytes_per_s: f64,
    /// Latency per hop (ring step), seconds.
    pub latency_s: f64,
    /// GPUs that reach each other over this link (an NVLink domain: 8 in an HGX board, 72 in a
    /// GB200 NVL72 rack, 2 for bridged pairs; PCIe: the GPUs of one server). Absent for the
    /// scale-out network, which reaches every node.
    #[serde(default)]
    pub gpus: Option<u64>,
}

/// The links of a GPU, fastest first. Collectives run over the fastest link whose domain holds
/// the whole group (see [`crate::parallel`]).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Interconnect {
    /// Scale-up link: NVLink (through NVSwitch or a bridge) or AMD Infinity Fabric.
    #[serde(default)]
    pub scale_up: Option<Link>,
    /// PCIe between the GPUs of one server.
    #[serde(default)]
    pub pcie: Option<Link>,
    /// Scale-out network between servers (InfiniBand or Ethernet), per GPU.
    #[serde(default)]
    pub network: Option<Link>,
}

impl Interconnect {
    fn validate(&self, gpu: &str) -> Result<()> {
        let links = [("scale_up", &self.scale_up), ("pcie", &self.pcie), ("network", &self.network)];
        for (key, link) in links {
            let Some(l) = link else { continue };
            let field = |f: &str| format!("{gpu}.interconnect.{key}.{f}");
            limits::LINK_BANDWIDTH.check_with(|| field("bandwidth_bytes_per_s"), l.bandwidth_bytes_per_s)?;
            limits::LINK_LATENCY_S.check_with(|| field("latency_s"), l.latency_s)?;
            match (key, l.gpus) {
                ("network", Some(_)) => {
                    return Err(Error::invalid(field("gpus"), "given", "absent: the network reaches every node"))
                }
                ("network", None) => {}
                (_, None) => {
                    return Err(Error::MissingField { field: field("gpus"), context: "a scale-up or PCIe link".into() })
                }
                (_, Some(n)) if !(2..=crate::limits::MAX_GPUS_PER_REPLICA).contains(&n) => {
                    return Err(Error::invalid(field("gpus"), n, integer_in(2, crate::limits::MAX_GPUS_PER_REPLICA)))
                }
                _ => {}
            }
        }
        Ok(())
    }
}

/// `onchip` in the file: a profile name or an inline table.
#[derive(Deserialize)]
#[serde(untagged)]
enum OnChipRef {
    Profile(String),
    Inline(OnChip),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct GpuRecord {
    name: String,
    #[serde(default)]
    aliases: Vec<String>,
    display: Option<String>,
    sm_count: u64,
    memory_bytes: f64,
    memory_bandwidth_bytes_per_s: f64,
    l2_bytes: f64,
    onchip: OnChipRef,
    achievable: Option<AchievableRef>,
    kernel_tables: Option<String>,
    usd_per_gpu_hour: Option<f64>,
    #[serde(default)]
    sources: String,
    peak_flops_per_s: PeakFlops,
    #[serde(default)]
    interconnect: Interconnect,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct GpuFile {
    #[serde(default)]
    onchip: BTreeMap<String, OnChip>,
    #[serde(default)]
    achievable: BTreeMap<String, AchievableProfile>,
    #[serde(default)]
    gpu: Vec<GpuRecord>,
}

impl Gpu {
    /// Peak FLOP/s for a math format, `None` if the GPU has no such path. fp32 GEMMs are costed
    /// at the vector (non-tensor) rate, as PyTorch runs them without TF32 by default.
    pub fn peak(&self, math: MathFormat) -> Option<f64> {
        let p = &self.peak_flops_per_s;
        match math {
            MathFormat::Vector | MathFormat::Fp32 => Some(p.vector),
            MathFormat::Bf16 => Some(p.bf16),
            MathFormat::Fp16 => Some(p.fp16),
            MathFormat::Fp8 => p.fp8,
            MathFormat::Int8 => p.int8,
            MathFormat::Fp4 => p.fp4,
        }
    }

    /// The format a kernel actually runs at on this GPU: `wanted` if supported, otherwise the
    /// first supported fallback (fp4 → fp8 → bf16; int8 → bf16), as weight-dequantising kernels do.
    pub fn supported_math(&self, wanted: MathFormat) -> MathFormat {
        let mut m = wanted;
        loop {
            if self.peak(m).is_some() {
                return m;
            }
            match m.fallback() {
                Some(next) => m = next,
                None => return MathFormat::Vector,
            }
        }
    }

    /// Ridge point for a math format: peak ÷ bandwidth, FLOP per byte (H100 SXM bf16: 989.4e12 /
    /// 3.35e12 ≈ 295).
    pub fn ridge_flops_per_byte(&self, math: MathFormat) -> f64 {
        self.peak(self.supported_math(math)).unwrap_or(self.peak_flops_per_s.vector) / self.memory_bandwidth_bytes_per_s
    }

    /// Every number in its range ([`crate::limits`]: physical bounds, so no ratio or time the
    /// ledger derives from them can overflow or vanish).
    fn validate(&self) -> Result<()> {
        let f = |range: limits::Range, field: &str, v: f64| -> Result<f64> {
            range.check_with(|| format!("{}.{field}", self.name), v)
        };
        check_name(&self.name)?;
        if !(1..=limits::MAX_SM_COUNT).contains(&self.sm_count) {
            return Err(Error::invalid(
                format!("{}.sm_count", self.name),
                self.sm_count,
                integer_in(1, limits::MAX_SM_COUNT),
            ));
        }
        f(limits::GPU_MEMORY_BYTES, "memory_bytes", self.memory_bytes)?;
        f(limits::GPU_BANDWIDTH, "memory_bandwidth_bytes_per_s", self.memory_bandwidth_bytes_per_s)?;
        f(limits::GPU_L2_BYTES, "l2_bytes", self.l2_bytes)?;
        let p = &self.peak_flops_per_s;
        let peaks = [("vector", Some(p.vector)), ("bf16", Some(p.bf16)), ("fp16", Some(p.fp16))];
        let optional = [("tf32", p.tf32), ("fp8", p.fp8), ("int8", p.int8), ("fp4", p.fp4)];
        for (k, v) in peaks.into_iter().chain(optional) {
            if let Some(v) = v {
                f(limits::GPU_PEAK_FLOPS, &format!("peak_flops_per_s.{k}"), v)?;
            }
        }
        if let Some(usd) = self.usd_per_gpu_hour {
            f(limits::USD_PER_HOUR, "usd_per_gpu_hour", usd)?;
        }
        let o = &self.onchip;
        for (k, v) in [
            ("smem_per_sm_bytes", o.smem_per_sm_bytes),
            ("smem_per_block_bytes", o.smem_per_block_bytes),
            ("registers_per_sm", o.registers_per_sm),
            ("max_warps_per_sm", o.max_warps_per_sm),
            ("max_blocks_per_sm", o.max_blocks_per_sm),
            ("warp_size", o.warp_size),
        ] {
            if !(1..=limits::MAX_ONCHIP).contains(&v) {
                return Err(Error::invalid(format!("{}.onchip.{k}", self.name), v, integer_in(1, limits::MAX_ONCHIP)));
            }
        }
        f(limits::GPU_TENSOR_FLOPS_PER_SMEM_BYTE, "onchip.tensor_flops_per_smem_byte", o.tensor_flops_per_smem_byte)?;
        let a = &self.achievable;
        for (k, v) in [
            ("bandwidth", a.bandwidth),
            ("bf16", a.bf16),
            ("fp8", a.fp8),
            ("fp4", a.fp4),
            ("attention_prefill", a.attention_prefill),
        ] {
            if !(v > 0.0 && v <= 1.0) {
                return Err(Error::invalid(format!("{}.achievable.{k}", self.name), v, "a fraction in (0, 1]"));
            }
        }
        self.interconnect.validate(&self.name)
    }
}

fn check_name(name: &str) -> Result<()> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.' || b == b'_');
    if ok {
        Ok(())
    } else {
        Err(Error::invalid("name", format!("{name:?}"), "1-64 characters of a-z, 0-9, '-', '.', '_'"))
    }
}

/// Parse a GPU file (the catalogue schema). Built-in on-chip profiles (`sm80`, `sm90`, …) and
/// achievable profiles (`h100`, `default`, …) may be referenced by name from a user's file;
/// `kernel_tables` may not (the measured tables belong to the catalogue's own entries).
pub fn parse_gpu_file(text: &str) -> Result<Vec<Gpu>> {
    if text.len() > crate::limits::MAX_INPUT_FILE_BYTES {
        return Err(Error::invalid(
            "GPU file",
            format!("{} bytes", text.len()),
            format!("at most {} bytes", crate::limits::MAX_INPUT_FILE_BYTES),
        ));
    }
    let file: GpuFile = toml::from_str(text).map_err(|e| Error::toml("GPU file", text, &e))?;
    gpus_of(file, Some(&builtin_file()))
}

/// The embedded catalogue's file, read from its build-time JSON.
fn builtin_file() -> GpuFile {
    serde_json::from_str(BUILTIN_GPUS_JSON).expect("build.rs writes gpus.json from the valid gpus.toml")
}

/// The GPUs of a parsed file; `builtin` is the built-in catalogue whose profiles a user's file
/// may name (`None`: `file` is the built-in catalogue itself, whose entries alone may name
/// `kernel_tables`).
fn gpus_of(file: GpuFile, builtin: Option<&GpuFile>) -> Result<Vec<Gpu>> {
    let no_onchip = BTreeMap::new();
    let no_achievable = BTreeMap::new();
    let builtin_profiles = builtin.map_or(&no_onchip, |b| &b.onchip);
    let builtin_achievable = builtin.map_or(&no_achievable, |b| &b.achievable);
    if file.gpu.is_empty() {
        return Err(Error::MissingField { field: "[[gpu]]".into(), context: "a GPU file (at least one entry)".into() });
    }
    file.gpu
        .into_iter()
        .map(|r| {
            let onchip = match r.onchip {
                OnChipRef::Inline(o) => o,
                OnChipRef::Profile(p) => {
                    file.onchip.get(&p).or_else(|| builtin_profiles.get(&p)).cloned().ok_or_else(|| {
                        let mut names: Vec<&String> = file.onchip.keys().chain(builtin_profiles.keys()).collect();
                        names.sort();
                        names.dedup();
                        Error::unknown(format!("onchip profile for GPU `{}`", r.name), p, names)
                    })?
                }
            };
            let profile = |p: &str| {
                let found = file.achievable.get(p).or_else(|| builtin_achievable.get(p));
                found.map(|a| (a.fractions(), a.sources.clone())).ok_or_else(|| {
                    let mut names: Vec<&String> = file.achievable.keys().chain(builtin_achievable.keys()).collect();
                    names.sort();
                    names.dedup();
                    Error::unknown(format!("achievable profile for GPU `{}`", r.name), p, names)
                })
            };
            let (achievable, achievable_sources) = match &r.achievable {
                Some(AchievableRef::Inline(a)) => (a.fractions(), a.sources.clone()),
                Some(AchievableRef::Profile(p)) => profile(p)?,
                None => profile("default")?,
            };
            if r.kernel_tables.is_some() && builtin.is_some() {
                return Err(Error::invalid(
                    format!("{}.kernel_tables", r.name),
                    r.kernel_tables.unwrap_or_default(),
                    "absent: measured kernel tables belong to the built-in catalogue's entries",
                ));
            }
            let gpu = Gpu {
                achievable,
                achievable_sources,
                kernel_tables: r.kernel_tables,
                display: r.display.unwrap_or_else(|| r.name.clone()),
                name: r.name,
                aliases: r.aliases,
                sm_count: r.sm_count,
                memory_bytes: r.memory_bytes,
                memory_bandwidth_bytes_per_s: r.memory_bandwidth_bytes_per_s,
                l2_bytes: r.l2_bytes,
                peak_flops_per_s: r.peak_flops_per_s,
                onchip,
                usd_per_gpu_hour: r.usd_per_gpu_hour,
                interconnect: r.interconnect,
                sources: r.sources,
            };
            gpu.validate()?;
            Ok(gpu)
        })
        .collect()
}

/// The built-in catalogue, parsed once.
pub fn builtin_gpus() -> &'static [Arc<Gpu>] {
    static GPUS: OnceLock<Vec<Arc<Gpu>>> = OnceLock::new();
    GPUS.get_or_init(|| {
        gpus_of(builtin_file(), None)
            .expect("embedded crates/core/data/gpus.toml is valid (checked by tests)")
            .into_iter()
            .map(Arc::new)
            .collect()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gpu(name: &str) -> Arc<Gpu> {
        builtin_gpus().iter().find(|g| g.name == name).cloned().unwrap()
    }

    /// The catalogue's achievable profiles are the published measurements ÷ the datasheet
    /// figures they were measured against; every GPU has one (`default` where none is measured).
    #[test]
    fn achievable_fractions_are_the_measurements_over_the_datasheets() {
        let a = |n: &str| gpu(n).achievable;
        assert_eq!(a("a100-80gb-sxm").bandwidth, 1.61 / 2.039);
        assert_eq!(a("a100-40gb-sxm").bf16, 271.2 / 312.0);
        assert_eq!(a("h100-sxm").bandwidth, 2.90 / 3.35);
        assert_eq!(a("h100-pcie").fp8, 1402.6 / 1979.0);
        assert_eq!(a("h200").fp8, 1453.4 / 1979.0);
        assert_eq!(a("h200").attention_prefill, 329.3 / 989.0);
        assert_eq!(a("gb200").bandwidth, 7.35 / 8.0);
        assert_eq!(a("mi250x-gcd").bf16, 668.4 / 1300.0);
        assert_eq!(a("mi325x").attention_prefill, 328.6 / 1307.0);
        assert_eq!((a("l40s").bandwidth, a("rtx-4090").fp8), (0.85, 0.72));
        assert!(gpu("h100-sxm").achievable_sources.contains("STREAM"));
        assert_eq!(gpu("h100-sxm").kernel_tables.as_deref(), Some("h100_sxm"));
        assert_eq!(gpu("h100-pcie").kernel_tables, None);
    }

    /// A user's GPU file names a built-in achievable profile or gives its own; it cannot claim
    /// the catalogue's measured kernel tables; every mistake names the field.
    #[test]
    fn a_users_gpu_names_an_achievable_profile_but_not_kernel_tables() {
        let base = crate::testing::minimal_gpu_toml("mine");
        let with = |line: &str| base.replace("onchip = \"sm90\"\n", &format!("onchip = \"sm90\"\n{line}\n"));
        assert_eq!(parse_gpu_file(&base).unwrap()[0].achievable, gpu("l40s").achievable);
        assert_eq!(parse_gpu_file(&with("achievable = \"h100\"")).unwrap()[0].achievable, gpu("h100-sxm").achievable);
        let inline = "achievable = { bandwidth = 0.9, bf16 = 0.7, fp8 = 0.6, attention_prefill = 0.4 }";
        assert_eq!(parse_gpu_file(&with(inline)).unwrap()[0].achievable.bf16, 0.7);
        let e = parse_gpu_file(&with("achievable = \"h101\"")).unwrap_err().to_string();
        assert!(e.starts_with("unknown achievable profile for GPU `mine` `h101`; did you mean `h100`"), "{e}");
        let e = parse_gpu_file(&with("kernel_tables = \"h100_sxm\"")).unwrap_err().to_string();
        assert_eq!(e, "invalid `mine.kernel_tables`: h100_sxm (absent: measured kernel tables belong to the built-in catalogue's entries)");
        let bad = "achievable = { bandwidth = 1.2, bf16 = 0.7, fp8 = 0.6, attention_prefill = 0.4 }";
        let e = parse_gpu_file(&with(bad)).unwrap_err().to_string();
        assert_eq!(e, "invalid `mine.achievable.bandwidth`: 1.2 (a fraction in (0, 1])");
    }

    #[test]
    fn catalogue_has_the_required_gpus() {
        for name in [
            "a100-40gb-sxm",
            "a100-80gb-sxm",
            "h100-sxm",
            "h100-pcie",
            "h200",
            "b200",
            "l40s",
            "l4",
            "rtx-4090",
            "mi300x",
        ] {
            assert!(builtin_gpus().iter().any(|g| g.name == name), "{name} missing");
        }
    }

    #[test]
    fn h100_ridge_point_is_295() {
        // 989.4e12 / 3.35e12 = 295.34 FLOP/byte (hardware.md sanity check).
        let r = gpu("h100-sxm").ridge_flops_per_byte(MathFormat::Bf16);
        assert!((r - 295.343).abs() < 1e-3, "{r}");
    }

    #[test]
    fn a100_has_no_fp8_and_falls_back_to_bf16() {
        let a100 = gpu("a100-80gb-sxm");
        assert_eq!(a100.peak(MathFormat::Fp8), None);
        assert_eq!(a100.supported_math(MathFormat::Fp8), MathFormat::Bf16);
        assert_eq!(gpu("h100-sxm").supported_math(MathFormat::Fp4), MathFormat::Fp8);
        assert_eq!(gpu("b200").supported_math(MathFormat::Fp4), MathFormat::Fp4);
    }

    #[test]
    fn per_sm_flops_per_clock_check_out() {
        // peak = SMs x FLOP/clk/SM x clock (hardware.md §0): H100 132 x 4096 x 1.83e9 = 989.4e12.
        let h = gpu("h100-sxm");
        let per_clk = h.peak_flops_per_s.bf16 / (h.sm_count as f64 * 1.83e9);
        assert!((per_clk - 4096.0).abs() / 4096.0 < 1e-3, "{per_clk}");
        // A100: 108 x 2048 x 1.41e9 = 311.9e12.
        let a = gpu("a100-80gb-sxm");
        let per_clk = a.peak_flops_per_s.bf16 / (a.sm_count as f64 * 1.41e9);
        assert!((per_clk - 2048.0).abs() / 2048.0 < 2e-3, "{per_clk}");
    }

    #[test]
    fn the_build_time_json_is_the_toml_catalogue() {
        let from_toml = gpus_of(toml::from_str(BUILTIN_GPUS_TOML).unwrap(), None).unwrap();
        assert_eq!(from_toml.len(), builtin_gpus().len());
        for (toml_gpu, json_gpu) in from_toml.iter().zip(builtin_gpus()) {
            assert_eq!(toml_gpu, &**json_gpu);
        }
    }

    #[test]
    fn user_file_can_reference_builtin_profiles() {
        let text = crate::testing::minimal_gpu_toml("my-gpu");
        let g = parse_gpu_file(&text).unwrap();
        assert_eq!(g[0].onchip.max_warps_per_sm, 64);
        assert_eq!(g[0].ridge_flops_per_byte(MathFormat::Bf16), 100.0);
    }

    #[test]
    fn bad_gpu_files_name_the_problem() {
        let e = parse_gpu_file("[[gpu]]\nname = \"x\"\n").unwrap_err().to_string();
        assert_eq!(e, "malformed GPU file: missing field `sm_count` (line 1)");
        let e = parse_gpu_file("").unwrap_err().to_string();
        assert!(e.contains("[[gpu]]"), "{e}");
        let text = BUILTIN_GPUS_TOML.replacen(
            "memory_bandwidth_bytes_per_s = 1.555e12",
            "memory_bandwidth_bytes_per_s = -1",
            1,
        );
        let e = parse_gpu_file(&text).unwrap_err().to_string();
        assert_eq!(e, "invalid `a100-40gb-sxm.memory_bandwidth_bytes_per_s`: -1 (a number in [1e6, 1e15])");
        let text =
            BUILTIN_GPUS_TOML.replacen("tensor_flops_per_smem_byte = 16 ", "tensor_flops_per_smem_byte = -1 ", 1);
        let e = parse_gpu_file(&text).unwrap_err().to_string();
        assert_eq!(e, "invalid `a100-40gb-sxm.onchip.tensor_flops_per_smem_byte`: -1 (a number in [0, 1e6])");
        let text = BUILTIN_GPUS_TOML.replacen("onchip = \"sm80\"", "onchip = \"sm99\"", 1);
        let e = parse_gpu_file(&text).unwrap_err().to_string();
        assert!(e.contains("unknown onchip profile for GPU `a100-40gb-sxm` `sm99`; did you mean `sm89` or `sm90`? accepted: cdna, sm100"), "{e}");
    }
}
