//! Measured against the ledger (the reference calculator: "Measuring against the ledger"):
//!
//! * **MBU** (model bandwidth utilisation) = ledger bytes per step ÷ measured step time ÷ peak
//!   bandwidth = `memory_floor_s / T`;
//! * **MFU** (model FLOPs utilisation) = ledger FLOPs ÷ measured time ÷ peak compute =
//!   `compute_floor_s / T`, where each operator's FLOPs count against the peak of the format it
//!   runs in (for an all-bf16 model: FLOPs ÷ T ÷ bf16 peak).
//!
//! A measured throughput converts to a step time as `T = tokens per step ÷ tokens per second`
//! (decode: one token per sequence; prefill: every prompt token).
//!
//! The reference calculator's reading: healthy decode shows high MBU and low MFU. Below about 60 % of both roofs,
//! time is going where the ledger does not count — kernel launches and Python overhead (CUDA
//! Graphs replay a step with one launch), unfused kernels, tensor-parallel communication — so look
//! there before buying hardware. Above 100 % the measurement is faster than the hardware allows
//! for the ledger's bytes or FLOPs: an input (precision, batch, context, GPU) does not match.

use crate::error::{compact_f64, Error, Result};
use crate::ledger::summarise;
use crate::limits;
use crate::scenario::Scenario;
use crate::serving::Measured;
use serde::Serialize;

/// Utilisation at and above which a step counts as bound by what the ledger counts (the reference calculator:
/// "Below about 60 percent, look for launches, unfused kernels and communication").
pub const HEALTHY_UTILISATION: f64 = 0.6;

/// What the utilisation says (the report puts it in words: `llm_ledger_report::measure::advice`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Reading {
    /// Above 100 % of a roof: the inputs do not describe what was measured.
    AboveRoof,
    /// At least 60 % of a roof: bound by the ledger's bytes or FLOPs.
    NearRoof,
    /// Below 60 % of both roofs: overhead the ledger does not count.
    Overhead,
}

/// A measurement read against the ledger.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Utilisation {
    /// Measured step time, seconds.
    pub measured_step_s: f64,
    /// Measured tokens per second.
    pub measured_tokens_per_s: f64,
    /// The ledger's roofline step at the scenario's efficiencies, seconds.
    pub ledger_step_s: f64,
    /// Ledger bytes at peak bandwidth, seconds.
    pub memory_floor_s: f64,
    /// Ledger FLOPs at each operator's peak, seconds.
    pub compute_floor_s: f64,
    /// Ledger HBM bytes per step.
    pub bytes: f64,
    /// Ledger FLOPs per step.
    pub flops: f64,
    /// Model bandwidth utilisation.
    pub mbu: f64,
    /// Model FLOPs utilisation.
    pub mfu: f64,
    /// measured ÷ ledger step.
    pub measured_over_ledger: f64,
    /// The reading.
    pub reading: Reading,
}

impl Utilisation {
    /// [`Utilisation::of`], with the step the measurement implies checked against the physical
    /// range of a measured step ([`limits::STEP_MS`], 1 µs to one hour): a throughput in range
    /// (`tokens_per_s` up to 10¹⁵) may still imply a step of a femtosecond for a small batch, or
    /// of days for a huge one, and the MBU it gives is then no reading of a GPU. The error names
    /// the input the user gave (`tokens_per_s`, `step_ms`) and the throughputs this step's tokens
    /// allow.
    pub fn checked(sc: &Scenario, measured: Measured) -> Result<Utilisation> {
        let (lo, hi) = (limits::STEP_MS.min / 1e3, limits::STEP_MS.max / 1e3);
        match measured {
            Measured::StepTime(t) if !(lo..=hi).contains(&t) => {
                return Err(Error::invalid("step_ms", compact_f64(t * 1e3), limits::STEP_MS.expected()))
            }
            Measured::TokensPerS(r) => {
                let tokens = sc.workload.step_tokens();
                let t = tokens / r;
                if !(t.is_finite() && (lo..=hi).contains(&t)) {
                    return Err(Error::invalid(
                        "tokens_per_s",
                        compact_f64(r),
                        format!(
                            "a throughput whose step of {} tokens takes between 1 µs and 1 hour: a number in [{}, {}] here; {} would be a step of {} s",
                            three_digits(tokens),
                            three_digits(tokens / hi),
                            three_digits(tokens / lo),
                            compact_f64(r),
                            three_digits(t)
                        ),
                    ));
                }
            }
            Measured::StepTime(_) => {}
        }
        Ok(Utilisation::of(sc, measured))
    }

    /// Read a measurement of the scenario's step.
    pub fn of(sc: &Scenario, measured: Measured) -> Utilisation {
        let s = summarise(sc);
        let t = match measured {
            Measured::StepTime(t) => t,
            Measured::TokensPerS(r) => s.tokens / r,
        };
        let mbu = s.memory_floor_s / t;
        let mfu = s.compute_floor_s / t;
        let reading = if mbu > 1.0 || mfu > 1.0 {
            Reading::AboveRoof
        } else if mbu.max(mfu) >= HEALTHY_UTILISATION {
            Reading::NearRoof
        } else {
            Reading::Overhead
        };
        Utilisation {
            measured_step_s: t,
            measured_tokens_per_s: s.tokens / t,
            ledger_step_s: s.step_time_s(),
            memory_floor_s: s.memory_floor_s,
            compute_floor_s: s.compute_floor_s,
            bytes: s.cost.bytes(),
            flops: s.cost.flops,
            mbu,
            mfu,
            measured_over_ledger: t / s.step_time_s(),
            reading,
        }
    }
}

/// `x` to three significant digits, compactly (`2.78e-4`, `1e6`).
fn three_digits(x: f64) -> String {
    compact_f64(format!("{x:.2e}").parse().unwrap_or(x))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seed(batch: &str) -> Scenario {
        crate::testing::scenario(&[("counting", "seed"), ("batch", batch)])
    }

    #[test]
    fn the_ledgers_own_step_reads_as_the_bandwidth_efficiency() {
        // Batch 1 decode is memory-bound in every row, so the ledger's step is bytes ÷ (0.8 × peak
        // bandwidth) and a measurement equal to it has MBU = 0.8 exactly.
        let s = seed("1");
        let u = Utilisation::of(&s, Measured::StepTime(summarise(&s).step_time_s()));
        assert!((u.mbu - 0.8).abs() < 1e-12, "{}", u.mbu);
        assert_eq!(u.reading, Reading::NearRoof);
        assert!(u.mfu < 0.01, "decode has low MFU: {}", u.mfu);
    }

    #[test]
    fn a_slow_step_reads_as_overhead() {
        // 15,009,316,864 weight + 2,048 × 131,072 KV = 15,277,752,320 bytes in 10 ms on 3.35 TB/s:
        // MBU = 15.28e9 / 1e-2 / 3.35e12 = 45.6 %.
        let u = Utilisation::of(&seed("1"), Measured::StepTime(0.010));
        assert_eq!(u.bytes, 15_277_752_320.0);
        assert_eq!(format!("{:.3}", u.mbu), "0.456");
        assert_eq!(u.reading, Reading::Overhead);
    }

    /// A throughput inside `--tokens-per-s`'s range whose step is not one a GPU takes (10¹⁵
    /// tokens/s at batch 1: a femtosecond step, an MBU of 10¹⁰ %) is refused by the input given.
    #[test]
    fn a_throughput_implying_an_unphysical_step_is_refused() {
        let s = seed("1");
        let e = Utilisation::checked(&s, Measured::TokensPerS(1e15)).unwrap_err().to_string();
        assert_eq!(
            e,
            "invalid `tokens_per_s`: 1e15 (a throughput whose step of 1 tokens takes between 1 µs and 1 hour: a number in [2.78e-4, 1e6] here; 1e15 would be a step of 1e-15 s)"
        );
        let e = Utilisation::checked(&seed("1073741824"), Measured::TokensPerS(1e-3)).unwrap_err().to_string();
        assert!(e.starts_with("invalid `tokens_per_s`: 0.001 (a throughput whose step of 1.07e9 tokens"), "{e}");
        assert!(Utilisation::checked(&s, Measured::StepTime(1e-300)).unwrap_err().to_string().contains("`step_ms`"));
        let ok = Utilisation::checked(&s, Measured::TokensPerS(133.0)).unwrap();
        assert_eq!(ok, Utilisation::of(&s, Measured::TokensPerS(133.0)));
    }

    #[test]
    fn throughput_converts_through_tokens_per_step() {
        // Batch 64 at 6,400 tok/s is 10 ms per step.
        let s = seed("64");
        let a = Utilisation::of(&s, Measured::TokensPerS(6400.0));
        let b = Utilisation::of(&s, Measured::StepTime(0.010));
        assert_eq!(a.mbu, b.mbu);
        assert_eq!(a.measured_step_s, 0.01);
        // 1 ms is faster than 32 GB can move on 3.35 TB/s.
        assert_eq!(Utilisation::of(&s, Measured::StepTime(0.001)).reading, Reading::AboveRoof);
    }
}
