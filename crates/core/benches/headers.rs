//! Speed of the checkpoint header parsers on large inputs: a safetensors header of 200,000
//! tensors (14 MB) and a `model.safetensors.index.json` of DeepSeek-V3's size (91,991 tensors in
//! 163 shards). Both are linear in their input. Run with `cargo bench -p llm-ledger-core --bench
//! headers`.

use criterion::{black_box, criterion_group, criterion_main, Criterion, Throughput};
use llm_ledger_core::model::safetensors::{index_shards, parse_header};

fn headers(c: &mut Criterion) {
    let n = 200_000;
    let name = |i: usize| format!("model.layers.{}.mlp.experts.{}.up_proj.weight", i / 256, i % 256);
    let (header, file_bytes) =
        llm_ledger_core::testing::safetensors_header((0..n).map(|i| (name(i), "BF16", vec![64, 128])));
    let mut g = c.benchmark_group("checkpoint headers");
    g.sample_size(10);
    g.throughput(Throughput::Bytes(header.len() as u64));
    g.bench_function("safetensors header, 200,000 tensors", |b| {
        b.iter(|| parse_header(black_box(&header), file_bytes).unwrap().len())
    });
    let map: serde_json::Map<String, serde_json::Value> = (0..91_991)
        .map(|i| (name(i), format!("model-{:05}-of-000163.safetensors", 1 + i * 163 / 91_991).into()))
        .collect();
    let index = serde_json::to_string_pretty(&serde_json::json!({"weight_map": map})).unwrap();
    g.throughput(Throughput::Bytes(index.len() as u64));
    g.bench_function("index of 91,991 tensors in 163 shards", |b| {
        b.iter(|| index_shards(black_box(&index)).unwrap().len())
    });
    g.finish();
}

criterion_group!(benches, headers);
criterion_main!(benches);
