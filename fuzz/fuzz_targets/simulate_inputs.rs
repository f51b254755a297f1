#![no_main]
#[path = "../../crates/app/tests/fuzz_checks/mod.rs"]
mod fuzz_checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| fuzz_checks::check_simulate_inputs(data));
