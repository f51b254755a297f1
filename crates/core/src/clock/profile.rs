//! A calibration profile: constants fitted to a user's own measurements
//! (`llm-ledger calibrate`, [`crate::fit`]) that adjust the expected clock for their deployment.
//!
//! For an operator the clock times at `t` with roofs `c` (compute) and `m` (memory):
//!
//! `t' = t · (memory_scale if m ≥ c else compute_scale) + kernel_s` (the last only for an
//! operator in a kernel of its own, not one the engine fuses into its neighbour),
//!
//! so `memory_scale` corrects the achieved bandwidth of memory-bound kernels (1.1 = 10 % slower
//! than the clock says), `compute_scale` the achieved throughput of compute-bound ones, and
//! `kernel_s` the fixed cost per kernel (launch gaps, an engine's per-kernel overhead). The
//! identity profile (1, 1, 0) leaves every time bit for bit as it was. Collectives are not scaled.
//! `host_step_s` adds host time per step, waited for by the GPU, to the engine's own
//! ([`crate::engine::Engine::host_step_s`]): the step's `host` row.
//! The roofline clock ignores profiles: it is the explanation, not the estimate.

use super::Model;
use crate::error::{Error, Result};
use crate::hardware::Gpu;
use crate::layout::CollectiveCall;
use crate::operator::Op;
use crate::roofline::{Efficiency, Join, TimeModel, Timed, Timing};
use serde::{Deserialize, Serialize};

/// Fitted adjustments of the expected clock (module docs).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Profile {
    /// Multiplier on memory-bound operators' expected time.
    pub memory_scale: f64,
    /// Multiplier on compute-bound operators' expected time.
    pub compute_scale: f64,
    /// Seconds added to every operator that runs in a kernel of its own.
    pub kernel_s: f64,
    /// Seconds of host time per step the GPU waits for, added to the engine's own.
    pub host_step_s: f64,
}

impl Default for Profile {
    fn default() -> Self {
        Profile::IDENTITY
    }
}

/// Bounds a profile's constants must lie in: scales 0.1–10 (a clock off by more than 10× is a
/// wrong input, not a calibration), `kernel_s` 0–1 ms.
pub const SCALE_RANGE: (f64, f64) = (0.1, 10.0);
/// Most seconds a profile may add per kernel.
pub const MAX_KERNEL_S: f64 = 1e-3;
/// Most seconds of host time a profile may add per step.
pub const MAX_HOST_STEP_S: f64 = 0.1;

impl Profile {
    /// No adjustment.
    pub const IDENTITY: Profile = Profile { memory_scale: 1.0, compute_scale: 1.0, kernel_s: 0.0, host_step_s: 0.0 };

    /// Whether this profile changes nothing.
    pub fn is_identity(&self) -> bool {
        *self == Profile::IDENTITY
    }

    /// A checked profile.
    pub fn new(memory_scale: f64, compute_scale: f64, kernel_s: f64) -> Result<Profile> {
        let scale = |name: &str, v: f64| {
            if (SCALE_RANGE.0..=SCALE_RANGE.1).contains(&v) {
                Ok(v)
            } else {
                Err(Error::invalid(
                    name,
                    crate::error::compact_f64(v),
                    format!("a multiplier in [{}, {}]", SCALE_RANGE.0, SCALE_RANGE.1),
                ))
            }
        };
        let memory_scale = scale("memory_scale", memory_scale)?;
        let compute_scale = scale("compute_scale", compute_scale)?;
        if !(0.0..=MAX_KERNEL_S).contains(&kernel_s) {
            return Err(Error::invalid(
                "kernel_s",
                crate::error::compact_f64(kernel_s),
                format!("seconds in [0, {MAX_KERNEL_S}]"),
            ));
        }
        Ok(Profile { memory_scale, compute_scale, kernel_s, host_step_s: 0.0 })
    }

    /// This profile with `host_step_s` seconds of host time per step (checked: 0 to
    /// [`MAX_HOST_STEP_S`]).
    pub fn with_host_step_s(self, host_step_s: f64) -> Result<Profile> {
        if !(0.0..=MAX_HOST_STEP_S).contains(&host_step_s) {
            return Err(Error::invalid(
                "host_step_s",
                crate::error::compact_f64(host_step_s),
                format!("seconds in [0, {MAX_HOST_STEP_S}]"),
            ));
        }
        Ok(Profile { host_step_s, ..self })
    }

    /// A profile file (TOML: `memory_scale`, `compute_scale`, `kernel_s`, optionally
    /// `host_step_s`, and an optional `[fit]` table that `calibrate` writes for the record and is
    /// not read).
    pub fn from_toml(text: &str) -> Result<Profile> {
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct File {
            memory_scale: f64,
            compute_scale: f64,
            kernel_s: f64,
            #[serde(default)]
            host_step_s: f64,
            #[serde(default)]
            #[allow(dead_code)]
            fit: Option<toml::Value>,
        }
        let f: File = toml::from_str(text).map_err(|e| Error::toml("profile file", text, &e))?;
        Profile::new(f.memory_scale, f.compute_scale, f.kernel_s)?.with_host_step_s(f.host_step_s)
    }

    /// The constants a profile file's `[fit]` table records as undetermined by the rows it was
    /// fitted on (`relative_std_error_<name> = "undetermined"`, as `calibrate` writes it): their
    /// values are where the fit left them, not measurements. Empty for a file without the table.
    pub fn undetermined_in(text: &str) -> Vec<String> {
        let Ok(v) = text.parse::<toml::Table>() else { return Vec::new() };
        let Some(fit) = v.get("fit").and_then(toml::Value::as_table) else { return Vec::new() };
        fit.iter()
            .filter(|(_, v)| v.as_str() == Some("undetermined"))
            .filter_map(|(k, _)| k.strip_prefix("relative_std_error_").map(str::to_string))
            .collect()
    }

    /// `t'` of the module docs for one operator's timing from the clock, for an operator that
    /// holds `kernel_share` of a kernel: 1 in a kernel of its own, its share of a merged GEMM
    /// ([`Join::Part`]), 0 fused into another kernel.
    pub fn adjust(&self, t: Timing, kernel_share: f64) -> Timing {
        let scale = if t.memory_s >= t.compute_s { self.memory_scale } else { self.compute_scale };
        Timing { time_s: t.time_s * scale + self.kernel_s * kernel_share, ..t }
    }
}

/// A time model with a [`Profile`] applied to the expected time (never to the roofline's).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Profiled {
    /// The clock.
    pub model: Model,
    /// The adjustment.
    pub profile: Profile,
}

impl TimeModel for Profiled {
    #[inline]
    fn op_time(&self, op: &Op, gpu: &Gpu, eff: Efficiency) -> Timing {
        self.timed(op, gpu, eff).timing
    }

    /// The clock's [`Timed`] with the profile applied to its time ([`Profile::adjust`], the
    /// operator's share of its kernel from its join); a profile that slows the clock down is a
    /// cause where the clock names none.
    #[inline]
    fn timed(&self, op: &Op, gpu: &Gpu, eff: Efficiency) -> Timed {
        let t = self.model.timed(op, gpu, eff);
        if self.profile.is_identity() || self.model.is_roofline() {
            return t;
        }
        let share = match t.join {
            Join::Own => 1.0,
            Join::Part { share, .. } => share,
            Join::Fused { .. } => 0.0,
        };
        let scaled = self.profile.memory_scale > 1.0 || self.profile.compute_scale > 1.0;
        Timed {
            timing: self.profile.adjust(t.timing, share),
            cause: t.cause.or(scaled.then_some(crate::roofline::SlowCause::Profile)),
            ..t
        }
    }

    #[inline]
    fn join(&self, op: &Op) -> Join {
        self.model.join(op)
    }

    #[inline]
    fn kernel_fixed_s(&self) -> f64 {
        self.model.kernel_fixed_s() + self.profile.kernel_s
    }

    #[inline]
    fn link_time(&self, call: Option<&CollectiveCall>, link_s: f64) -> Timing {
        self.model.link_time(call, link_s)
    }

    #[inline]
    fn is_roofline(&self) -> bool {
        self.model.is_roofline()
    }

    #[inline]
    fn host_step_s(&self) -> f64 {
        if self.model.is_roofline() {
            0.0
        } else {
            self.model.host_step_s() + self.profile.host_step_s
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_profile_scales_by_bound_and_adds_its_kernel_cost() {
        let p = Profile::new(1.2, 0.9, 3e-6).unwrap();
        let mem = Timing { compute_s: 1e-6, memory_s: 4e-6, time_s: 9e-6, ..Timing::default() };
        // Memory-bound: 9 µs × 1.2 + 3 µs = 13.8 µs; fused into its neighbour: no kernel cost.
        assert!((p.adjust(mem, 1.0).time_s - 13.8e-6).abs() < 1e-15);
        assert!((p.adjust(mem, 0.0).time_s - 10.8e-6).abs() < 1e-15);
        // A quarter of a merged GEMM pays a quarter of the kernel's fixed cost.
        assert!((p.adjust(mem, 0.25).time_s - 11.55e-6).abs() < 1e-15);
        let comp = Timing { compute_s: 5e-6, memory_s: 4e-6, time_s: 10e-6, ..Timing::default() };
        assert!((p.adjust(comp, 0.0).time_s - 9e-6).abs() < 1e-15);
        assert_eq!(p.adjust(comp, 0.0).compute_s, 5e-6, "the roofs stay");
    }

    #[test]
    fn profile_files_parse_and_refuse_what_they_should() {
        let p = Profile::from_toml("memory_scale = 1.1\ncompute_scale = 0.95\nkernel_s = 2e-6\n[fit]\nrows = 12\n")
            .unwrap();
        assert_eq!(p, Profile { memory_scale: 1.1, compute_scale: 0.95, kernel_s: 2e-6, host_step_s: 0.0 });
        let p =
            Profile::from_toml("memory_scale = 1\ncompute_scale = 1\nkernel_s = 0\nhost_step_s = 1.5e-3\n").unwrap();
        assert_eq!(p.host_step_s, 1.5e-3);
        let e = Profile::from_toml("memory_scale = 1\ncompute_scale = 1\nkernel_s = 0\nhost_step_s = -1\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("`host_step_s`") && e.contains("[0, 0.1]"), "{e}");
        let e = Profile::from_toml("memory_scale = 0\ncompute_scale = 1\nkernel_s = 0\n").unwrap_err().to_string();
        assert!(e.contains("`memory_scale`") && e.contains("[0.1, 10]"), "{e}");
        let e = Profile::from_toml("memory_scale = 1\ncompute_scale = 1\nkernel_s = 1\n").unwrap_err().to_string();
        assert!(e.contains("`kernel_s`"), "{e}");
        let e = Profile::from_toml("memory_scale = 1\ncompute_scale = 1\n").unwrap_err().to_string();
        assert!(e.contains("kernel_s"), "{e}");
        let e = Profile::from_toml("memory_scale = 1\ncompute_scale = 1\nkernel_s = 0\nspeed = 2\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("speed"), "{e}");
        assert!(Profile::default().is_identity());
    }
}
