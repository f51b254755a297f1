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

/// A `model.safetensors.index.json` and, the same bytes as the JSON of a safetensors header, a
/// header: both parsers answer shards or tensors or one-line errors; the shards are plain,
/// distinct file names within the cap, the tensors fit the file and do not overlap.
pub fn check_safetensors_index(data: &[u8]) {
    use llm_ledger_core::model::safetensors::{index_shards, parse_header, MAX_SHARDS};
    if let Ok(text) = std::str::from_utf8(data) {
        match index_shards(text) {
            Ok(shards) => {
                assert!(shards.len() <= MAX_SHARDS);
                assert!(shards.windows(2).all(|w| w[0] < w[1]), "sorted, each once");
                assert!(shards
                    .iter()
                    .all(|s| !s.contains(['/', '\\']) && !s.starts_with('.') && s.ends_with(".safetensors")));
            }
            Err(e) => assert!(!e.to_string().contains('\n'), "{e}"),
        }
    }
    let mut file = (data.len() as u64).to_le_bytes().to_vec();
    file.extend(data);
    let data_bytes = 4096u64;
    match parse_header(&file, file.len() as u64 + data_bytes) {
        Ok(tensors) => {
            let total: u64 = tensors.iter().map(|t| t.bytes).sum();
            assert!(total <= data_bytes, "{total} bytes of tensors in {data_bytes} data bytes");
        }
        Err(e) => assert!(!e.to_string().contains('\n'), "{e}"),
    }
}

/// A GGUF file's first bytes (the header and some data), read as the CLI reads it (more while the
/// parser asks, up to the file's end): a header, or a one-line error; a header's tensors fit the
/// file without sharing bytes, and a model it describes gives a finite ledger.
pub fn check_gguf_metadata(data: &[u8]) {
    use llm_ledger_core::model::gguf::{self, Parsed};
    let size = data.len() as u64;
    let mut have = data.len().min(64);
    let g = loop {
        match gguf::parse(&data[..have], size) {
            Ok(Parsed::Done(g)) => break g,
            Ok(Parsed::NeedMore(n)) => {
                assert!(n > have as u64 && n <= size, "asks for {n} of {size} bytes having {have}");
                have = n as usize;
            }
            Err(e) => {
                assert!(!e.to_string().contains('\n'), "{e}");
                return;
            }
        }
    };
    assert!(g.weight_bytes() <= size, "{} bytes of tensors in a {size}-byte file", g.weight_bytes());
    if let Ok(spec) = gguf::model(&g, "fuzz") {
        let mut c = Catalog::builtin();
        c.add_model(spec);
        let req = ScenarioRequest { model: Some("fuzz".into()), batch: Some("4".into()), ..Default::default() };
        if let Ok(s) = req.resolve(&c) {
            assert_finite(&s);
        }
    }
}
