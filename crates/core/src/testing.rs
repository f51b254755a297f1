//! Test support shared by this crate's tests and the report crate's: a scenario from
//! `(field, value)` pairs of [`ScenarioRequest`], by field name.

use crate::kernels::{AttentionPhase, AttentionQuery, AttnDtype, MoeDtype, MoeQuery};
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

/// Llama 3 8B's attention on one GPU as the kernel tables key it: bf16 math and KV cache, head
/// dimension 128, 32 query heads over 8 KV heads, full attention; `batch` sequences at `length`
/// tokens each.
pub fn llama_attention(phase: AttentionPhase, batch: f64, length: f64) -> AttentionQuery {
    AttentionQuery {
        phase,
        dtype: AttnDtype::Bf16,
        kv_dtype: AttnDtype::Bf16,
        head_dim: 128,
        heads: 32.0,
        kv_heads: 8.0,
        window: 0,
        batch,
        length,
    }
}

/// Mixtral 8x7B's routed experts on one GPU as the fused-MoE tables key them: bf16, hidden 4096,
/// intermediate 14336, top-2 of 8 experts, no tensor or expert split; `tokens` into the layer.
pub fn mixtral_moe(tokens: f64) -> MoeQuery {
    MoeQuery { dtype: MoeDtype::Bf16, hidden: 4096, intermediate: 14336, top_k: 2, experts: 8, tp: 1, ep: 1, tokens }
}

/// A minimal user GPU file (no interconnect, the built-in `sm90` on-chip profile): 80 GB at
/// 1 TB/s, bf16/fp16 at 100 TFLOP/s (ridge 100 FLOP/B), vector 10 TFLOP/s.
pub fn minimal_gpu_toml(name: &str) -> String {
    format!(
        "[[gpu]]\nname = \"{name}\"\nsm_count = 10\nmemory_bytes = 80e9\nmemory_bandwidth_bytes_per_s = 1e12\n\
         l2_bytes = 4e6\nonchip = \"sm90\"\n[gpu.peak_flops_per_s]\nvector = 10e12\nbf16 = 100e12\nfp16 = 100e12\n"
    )
}

/// The header of a safetensors file holding `tensors` (name, dtype, shape), laid end to end from
/// offset 0: the 8-byte length and the JSON, without the data; and the size of the whole file
/// (header and data), for [`crate::model::safetensors::parse_header`].
pub fn safetensors_header<'a>(tensors: impl IntoIterator<Item = (String, &'a str, Vec<u64>)>) -> (Vec<u8>, u64) {
    use std::fmt::Write;
    let mut json = String::from("{");
    let mut at = 0u64;
    for (name, dtype, shape) in tensors {
        let bits = crate::model::safetensors::Dtype::bits_of(dtype).map_or(8, u64::from);
        let len = shape.iter().try_fold(bits, |a, d| a.checked_mul(*d)).map_or(0, |b| b.div_ceil(8));
        if json.len() > 1 {
            json.push(',');
        }
        let shape: Vec<String> = shape.iter().map(u64::to_string).collect();
        let _ = write!(
            json,
            "{}:{{\"dtype\":\"{dtype}\",\"shape\":[{}],\"data_offsets\":[{at},{}]}}",
            Value::String(name),
            shape.join(","),
            at + len
        );
        at += len;
    }
    json.push('}');
    let mut out = (json.len() as u64).to_le_bytes().to_vec();
    out.extend(json.as_bytes());
    let file_bytes = out.len() as u64 + at;
    (out, file_bytes)
}
