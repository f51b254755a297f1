//! Bounds on user input. Values outside them are refused with a message naming the field, so no
//! computation ever sees a size that could overflow or hang. All FLOP and byte arithmetic is done in
//! `f64`, so products of in-range sizes (a 10¹²-token context squared is 10²⁴) stay finite.

use crate::error::{compact_f64, Error, Result};

/// Largest config/GPU/histogram file accepted (real `config.json` files are under 10 KB).
pub const MAX_INPUT_FILE_BYTES: usize = 4 << 20;

/// Largest context histogram file: 32 MiB, room for [`MAX_CONTEXT_BUCKETS`] lines of
/// `context,count` (a 1M-line histogram of distinct lengths is about 14 MB).
pub const MAX_HISTOGRAM_BYTES: usize = 32 << 20;

/// Largest model dimension (hidden, intermediate, head_dim, LoRA ranks …): 2²⁴.
pub const MAX_DIM: u64 = 1 << 24;

/// Largest vocabulary: 2²⁴ = 16,777,216 (real vocabularies are ≤ 262,208).
pub const MAX_VOCAB: u64 = 1 << 24;

/// Largest number of decoder layers.
pub const MAX_LAYERS: u64 = 4096;

/// Largest number of attention heads.
pub const MAX_HEADS: u64 = 1 << 16;

/// Largest number of routed experts.
pub const MAX_EXPERTS: u64 = 1 << 16;

/// Largest batch (sequences in one step).
pub const MAX_BATCH: u64 = 1 << 30;

/// Largest context or prompt length, tokens (≈1.1 × 10¹²).
pub const MAX_CONTEXT: u64 = 1 << 40;

/// Most GPUs in one replica (`tp × pp × ep`).
pub const MAX_GPUS_PER_REPLICA: u64 = 4096;

/// Most buckets in a context histogram or per-sequence list.
pub const MAX_CONTEXT_BUCKETS: usize = 1 << 20;

/// Largest parameter count a model may describe: 2⁵⁰ ≈ 1.1 × 10¹⁵ (500× the largest published
/// model). Every parameter sum is then exact in `u64` (and in `f64`, below 2⁵³).
pub const MAX_PARAMS: u64 = 1 << 50;

/// The documented interval of one real-valued input: `[min, max]`, or `(min, max]` when
/// `min_open`. Each range is defined once here and checked by the core's parsers, so a flag, a
/// URL parameter and a file key with the same meaning accept exactly the same values (docs/inputs.md,
/// "Input ranges", is generated from [`RANGES`] and checked against it by a test).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Range {
    /// The input's name in messages and URLs (the flag is `--` and the name with `-` for `_`).
    pub name: &'static str,
    /// Lower bound.
    pub min: f64,
    /// Whether the lower bound itself is excluded.
    pub min_open: bool,
    /// Upper bound (included).
    pub max: f64,
    /// Unit and meaning, for the docs/inputs.md table.
    pub what: &'static str,
    /// Where the input comes from (flag and URL parameter, GPU file key …).
    pub given_as: &'static str,
}

impl Range {
    /// Whether `v` is inside (never for NaN or an infinity).
    pub fn contains(&self, v: f64) -> bool {
        v.is_finite() && v <= self.max && if self.min_open { v > self.min } else { v >= self.min }
    }

    /// The interval in words: `a number in [0.01, 1]`.
    pub fn expected(&self) -> String {
        format!("a number in {}", self.interval())
    }

    /// The interval: `[0.01, 1]`, `(0, 1e6]`.
    pub fn interval(&self) -> String {
        let open = if self.min_open { '(' } else { '[' };
        format!("{open}{}, {}]", compact_f64(self.min), compact_f64(self.max))
    }

    /// `v` if inside, else an error naming `field` (the input as the user gave it: a flag's name
    /// or a file key such as `my-gpu.memory_bytes`) and the interval.
    pub fn check(&self, field: &str, v: f64) -> Result<f64> {
        if self.contains(v) {
            Ok(v)
        } else {
            Err(Error::invalid(field, compact_f64(v), self.expected()))
        }
    }

    /// [`Range::check`] with the field's name made only when `v` is outside (a file's key path,
    /// formatted for the error alone).
    pub fn check_with(&self, field: impl FnOnce() -> String, v: f64) -> Result<f64> {
        if self.contains(v) {
            Ok(v)
        } else {
            self.check(&field(), v)
        }
    }

    /// Parse text (see [`parse_f64`]) and check it, under this range's name.
    pub fn parse(&self, s: &str) -> Result<f64> {
        self.check(self.name, parse_f64(self.name, s)?)
    }
}

const fn range(name: &'static str, min: f64, max: f64, what: &'static str, given_as: &'static str) -> Range {
    Range { name, min, min_open: false, max, what, given_as }
}

const FLAG: &str = "flag, URL parameter";

/// Achieved fraction of peak compute (`--compute-efficiency`); below 1 % no roofline is meaningful.
pub const COMPUTE_EFFICIENCY: Range = range("compute_efficiency", 0.01, 1.0, "fraction of peak FLOP/s", FLAG);
/// Achieved fraction of peak memory bandwidth (`--bandwidth-efficiency`).
pub const BANDWIDTH_EFFICIENCY: Range = range("bandwidth_efficiency", 0.01, 1.0, "fraction of peak bandwidth", FLAG);
/// Achieved fraction of link bandwidth (`--link-efficiency`).
pub const LINK_EFFICIENCY: Range = range("link_efficiency", 0.01, 1.0, "fraction of link bandwidth", FLAG);
/// MoE routing skew, a Zipf exponent (`--zipf`; 0 = uniform).
pub const ZIPF: Range = range("zipf", 0.0, 10.0, "Zipf exponent (0 = uniform)", FLAG);
/// One expert's measured load (`--expert-loads`), any scale; at least one must be positive.
pub const EXPERT_LOAD: Range =
    range("expert_loads", 0.0, 1e15, "relative load per expert (any scale)", "flag, URL parameter, CSV file");
/// Price of one GPU-hour, USD (`--usd-per-hour`, and a GPU file's `usd_per_gpu_hour`).
pub const USD_PER_HOUR: Range = Range {
    min_open: true,
    ..range("usd_per_hour", 0.0, 1e6, "USD per GPU-hour", "flag, URL parameter, GPU file (`usd_per_gpu_hour`)")
};
/// Bound on the time per output token, milliseconds (`--tpot-ms`): 1 µs to one hour.
pub const TPOT_MS: Range = range("tpot_ms", 1e-3, 3.6e6, "milliseconds per output token", FLAG);
/// A measured step time, milliseconds (`measure --step-ms`): 1 µs to one hour.
pub const STEP_MS: Range = range("step_ms", 1e-3, 3.6e6, "milliseconds", FLAG);
/// A measured throughput (`measure --tokens-per-s`).
pub const TOKENS_PER_S: Range = range("tokens_per_s", 1e-3, 1e15, "tokens per second", FLAG);
/// A GPU's memory capacity, bytes (GPU file `memory_bytes`): 1 MB to 1 PB.
pub const GPU_MEMORY_BYTES: Range = range("memory_bytes", 1e6, 1e15, "bytes", "GPU file");
/// A GPU's memory bandwidth, bytes/s (GPU file `memory_bandwidth_bytes_per_s`): 1 MB/s to 1 PB/s.
pub const GPU_BANDWIDTH: Range = range("memory_bandwidth_bytes_per_s", 1e6, 1e15, "bytes per second", "GPU file");
/// A GPU's last-level cache, bytes (GPU file `l2_bytes`).
pub const GPU_L2_BYTES: Range = range("l2_bytes", 1e3, 1e12, "bytes", "GPU file");
/// A dense peak of one math format, FLOP/s (GPU file `peak_flops_per_s.*`): 1 MFLOP/s to 1 EFLOP/s.
pub const GPU_PEAK_FLOPS: Range = range("peak_flops_per_s", 1e6, 1e18, "FLOP per second", "GPU file");
/// Tensor FLOPs per shared-memory byte (GPU file `onchip.tensor_flops_per_smem_byte`; 0 = unmodelled).
pub const GPU_TENSOR_FLOPS_PER_SMEM_BYTE: Range =
    range("tensor_flops_per_smem_byte", 0.0, 1e6, "FLOP per shared-memory byte", "GPU file");
/// A link's bandwidth per direction, bytes/s (GPU file `interconnect.*.bandwidth_bytes_per_s`).
pub const LINK_BANDWIDTH: Range = range("bandwidth_bytes_per_s", 1e6, 1e15, "bytes per second", "GPU file");
/// A link's latency per hop, seconds (GPU file `interconnect.*.latency_s`).
pub const LINK_LATENCY_S: Range = range("latency_s", 0.0, 1.0, "seconds", "GPU file");

/// An arrival rate, requests per second (`simulate --rate`, `plan --rate`): from 10⁻³⁰⁰ (the
/// gamma sampler's scale stays finite; `crate::simulate::MIN_RATE_PER_S` says why) to 10⁶.
pub const RATE: Range = range("rate", 1e-300, 1e6, "requests per second", FLAG);
/// The coefficient of variation of gamma gaps (`simulate --cv`): the gamma sampler's range
/// (`crate::simulate::workload::MIN_CV` and `MAX_CV` say why).
pub const CV: Range = range("cv", 1e-4, 100.0, "coefficient of variation of gamma gaps (the sampler's range)", FLAG);

/// Most requests in one simulation (`simulate --requests`, `--concurrency`, a trace's rows).
pub const MAX_SIM_REQUESTS: u64 = 1_000_000;
/// Most tokens in one simulated request's prompt or output.
pub const MAX_SIM_REQUEST_TOKENS: u64 = 1 << 24;
/// Most sequences, or tokens, in one simulated engine step; most tokens per KV block.
pub const MAX_SIM_STEP_SIZE: u64 = 1 << 24;
/// Most decode steps per scheduling (`num_scheduler_steps`; vLLM's benchmarks use 8 to 16).
pub const MAX_SIM_SCHEDULER_STEPS: u64 = 256;
/// Deepest speculation, draft tokens per step (published setups use 1 to 8).
pub const MAX_SIM_SPEC_DEPTH: u64 = 64;

/// Every real-valued input's range: the one definition the parsers and docs/inputs.md use.
pub const RANGES: &[Range] = &[
    COMPUTE_EFFICIENCY,
    BANDWIDTH_EFFICIENCY,
    LINK_EFFICIENCY,
    ZIPF,
    EXPERT_LOAD,
    USD_PER_HOUR,
    TPOT_MS,
    STEP_MS,
    TOKENS_PER_S,
    GPU_MEMORY_BYTES,
    GPU_BANDWIDTH,
    GPU_L2_BYTES,
    GPU_PEAK_FLOPS,
    GPU_TENSOR_FLOPS_PER_SMEM_BYTE,
    LINK_BANDWIDTH,
    LINK_LATENCY_S,
    RATE,
    CV,
];

/// Integer inputs with their bounds: `(name, min, max, what)`.
pub const INTEGER_RANGES: &[(&str, u64, u64, &str)] = &[
    ("batch", 1, MAX_BATCH, "sequences per step (also the total of a context mix)"),
    ("ctx, prompt, output, contexts", 0, MAX_CONTEXT, "tokens per sequence (prompt and output ≥ 1)"),
    ("contexts / histogram buckets", 1, MAX_CONTEXT_BUCKETS as u64, "distinct context lengths"),
    ("config.json dimensions", 1, MAX_DIM, "hidden, intermediate, head_dim, LoRA ranks (sliding_window: up to 2⁴⁰)"),
    ("config.json layers", 1, MAX_LAYERS, "num_hidden_layers, layer indices and counts"),
    ("config.json heads", 1, MAX_HEADS, "attention and KV heads"),
    ("config.json experts", 1, MAX_EXPERTS, "routed experts, top-k, shared experts (≥ 0)"),
    ("config.json vocab_size", 1, MAX_VOCAB, "tokens"),
    ("model parameters", 1, MAX_PARAMS, "the total a config describes"),
    ("GPU file sm_count", 1, MAX_SM_COUNT, "streaming multiprocessors"),
    ("GPU file onchip sizes", 1, MAX_ONCHIP, "shared memory, registers, warps, blocks, warp size"),
    ("simulate requests, concurrency", 1, MAX_SIM_REQUESTS, "requests per run (a trace: its rows)"),
    ("simulate prompt, output", 1, MAX_SIM_REQUEST_TOKENS, "tokens per request"),
    (
        "max_seqs, max_batched_tokens, chunk, block",
        1,
        MAX_SIM_STEP_SIZE,
        "sequences or tokens per engine step, tokens per KV block",
    ),
    ("max_steps", 1, u64::MAX, "engine steps over every run of one command (default 100000000; the explorer: 2000000)"),
];

/// Largest SM count in a GPU file.
pub const MAX_SM_COUNT: u64 = 100_000;

/// Largest on-chip size or count in a GPU file (shared memory bytes, registers, warps, blocks).
pub const MAX_ONCHIP: u64 = 1 << 30;

/// docs/inputs.md's "Input ranges" table, generated from [`RANGES`] and [`INTEGER_RANGES`].
pub fn ranges_markdown() -> String {
    let mut s = String::from("| input | accepted | unit | given as |\n|---|---|---|---|\n");
    for r in RANGES {
        s.push_str(&format!("| `{}` | {} | {} | {} |\n", r.name, r.interval(), r.what, r.given_as));
    }
    for (name, min, max, what) in INTEGER_RANGES {
        s.push_str(&format!("| {name} | {} | {what} | integer |\n", crate::error::range_words(min, max)));
    }
    s
}

/// Parse a finite number, naming the field on failure.
pub fn parse_f64(field: &str, s: &str) -> Result<f64> {
    match s.trim().parse::<f64>() {
        Ok(v) if v.is_finite() => Ok(v),
        _ => Err(Error::invalid(field, format!("{s:?}"), "a finite number")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_refuse_what_once_printed_nan_or_inf() {
        assert!(COMPUTE_EFFICIENCY.check("compute_efficiency", 5e-324).is_err());
        assert!(STEP_MS.check("step_ms", 1e-320).is_err());
        assert!(GPU_BANDWIDTH.check("x.memory_bandwidth_bytes_per_s", 1e-300).is_err());
        let e = USD_PER_HOUR.check("x.usd_per_gpu_hour", 1e308).unwrap_err().to_string();
        assert_eq!(e, "invalid `x.usd_per_gpu_hour`: 1e308 (a number in (0, 1e6])");
        assert!(USD_PER_HOUR.check("usd", 0.0).is_err());
        assert_eq!(USD_PER_HOUR.check("usd", 1e6).unwrap(), 1e6);
        for r in RANGES {
            assert!(!r.contains(f64::NAN) && !r.contains(f64::INFINITY) && r.contains(r.max), "{}", r.name);
            assert!(r.min < r.max && r.max.is_finite(), "{}", r.name);
        }
        let names: std::collections::BTreeSet<_> = RANGES.iter().map(|r| r.name).collect();
        assert_eq!(names.len(), RANGES.len(), "one definition per input");
    }
}
