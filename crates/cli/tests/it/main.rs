//! The CLI's integration tests, one test binary (one link on a 2-core machine) with a module per
//! concern and one shared harness.

mod bad_inputs;
mod calibrate;
mod checkpoint;
mod cli;
mod econ;
mod explorer;
mod fidelity;
mod fits;
mod harness;
mod hostile_runs;
mod hub;
mod outputs;
mod parallel;
mod plan_load;
mod readme;
mod serving_fidelity;
mod simulate;
mod suggestions;
mod ux;
mod widths;
mod zoom_tile;
