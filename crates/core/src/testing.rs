//! Test support shared by this crate's tests and the report crate's: a scenario from
//! `(field, value)` pairs of [`ScenarioRequest`], by field name.

use crate::scenario::{Catalog, Scenario, ScenarioRequest};
use serde_json::{Map, Value};

/// Resolve the request with these fields set (names as in [`ScenarioRequest`]); panics on a bad
/// field or value, which in a test is a bug in the test.
pub fn scenario(pairs: &[(&str, &str)]) -> Scenario {
    let fields: Map<String, Value> = pairs.iter().map(|(k, v)| (k.to_string(), Value::String(v.to_string()))).collect();
    let req: ScenarioRequest = serde_json::from_value(Value::Object(fields)).expect("known ScenarioRequest fields");
    req.resolve(&Catalog::builtin()).expect("the test's scenario resolves")
}

/// Llama 3 8B on the H100 under seed counting, `batch` × `ctx`.
pub fn seed(batch: u64, ctx: u64) -> Scenario {
    let (b, c) = (batch.to_string(), ctx.to_string());
    scenario(&[("counting", "seed"), ("batch", &b), ("ctx", &c)])
}

/// A minimal user GPU file (no interconnect, the built-in `sm90` on-chip profile): 80 GB at
/// 1 TB/s, bf16/fp16 at 100 TFLOP/s (ridge 100 FLOP/B), vector 10 TFLOP/s.
pub fn minimal_gpu_toml(name: &str) -> String {
    format!(
        "[[gpu]]\nname = \"{name}\"\nsm_count = 10\nmemory_bytes = 80e9\nmemory_bandwidth_bytes_per_s = 1e12\n\
         l2_bytes = 4e6\nonchip = \"sm90\"\n[gpu.peak_flops_per_s]\nvector = 10e12\nbf16 = 100e12\nfp16 = 100e12\n"
    )
}
