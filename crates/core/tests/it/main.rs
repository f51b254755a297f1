//! The core's integration tests, one test binary with a module per concern.

mod architectures;
mod checkpoint_headers;
mod clock_tables;
mod configs_2026;
mod cost_under_load;
mod disagg;
mod econ;
mod engines;
#[path = "../fuzz_checks/mod.rs"]
pub mod fuzz_checks;
mod fuzz_regressions;
mod invariants;
mod kernels;
mod message_ranges;
mod module_layers;
mod operators_2026;
mod parallel;
mod physical_bounds;
mod real_configs;
mod seed004;
mod serving_modes;
mod simulate;
