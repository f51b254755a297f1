//! The checks the fuzz targets run on each input, shared with the regression test that replays the
//! saved crash reproducers (`tests/fuzz_regressions/<target>/`). Each returns normally for any
//! input: parsing may fail with an error, but must not panic, hang or produce non-finite numbers.

#![allow(dead_code)]

use llm_ledger_core::hardware::parse_gpu_file;
use llm_ledger_core::model::parse_config_json;
use llm_ledger_core::{summarise, Catalog, Scenario, ScenarioRequest};

fn assert_finite(s: &Scenario) {
    let sum = summarise(s);
    let c = sum.cost;
    for v in [c.flops, c.bytes(), sum.timing.time_s] {
        assert!(v.is_finite() && v >= 0.0, "non-finite or negative result {v}");
    }
}

/// A config.json: parse; when it parses, its ledger at a small decode step is finite.
pub fn check_config_json(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Ok(spec) = parse_config_json(text, "fuzz") {
        let mut c = Catalog::builtin();
        c.add_model(spec);
        let req = ScenarioRequest { model: Some("fuzz".into()), batch: Some("4".into()), ..Default::default() };
        if let Ok(s) = req.resolve(&c) {
            assert_finite(&s);
        }
    }
}

/// A GPU file: parse; every GPU it defines gives a finite ledger.
pub fn check_gpu_file(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Ok(gpus) = parse_gpu_file(text) {
        for g in gpus {
            let name = g.name.clone();
            let mut c = Catalog::builtin();
            c.add_gpus(vec![g]);
            let s = ScenarioRequest { gpu: Some(name), ..Default::default() }.resolve(&c).unwrap();
            assert_finite(&s);
        }
    }
}

/// A URL query string, as the web explorer receives it.
pub fn check_scenario_query(data: &[u8]) {
    let Ok(req) = serde_urlencoded::from_bytes::<ScenarioRequest>(data) else { return };
    // Keep the work bounded: the fuzzer explores the parser, not 10¹²-token contexts.
    if let Ok(s) = req.resolve(&Catalog::builtin()) {
        assert_finite(&s);
    }
}
