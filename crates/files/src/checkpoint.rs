//! Checkpoint headers: the CLI reads at most the header bytes of `*.safetensors` and GGUF files
//! (never a tensor) and hands them to the core's parsers (`core::model::safetensors`,
//! `core::model::gguf`).

use anyhow::{bail, Context, Result};
use llm_ledger_core::memory::WeightFootprint;
use llm_ledger_core::model::safetensors::{self, HeaderBytes, TensorInfo, MAX_INDEX_BYTES, MAX_SHARDS};
use llm_ledger_core::model::{CheckpointQuant, ModelSpec, WeightPrecisions};
use llm_ledger_core::precision::Precision;
use std::io::Read;
use std::path::{Path, PathBuf};

/// Most tensors read from the shards of one checkpoint: 2²⁰ = 1,048,576, eleven times
/// DeepSeek-V3's 91,991. Shards are read one at a time and only their sums kept, so memory is
/// that of the largest header, and this bounds the time.
pub const MAX_CHECKPOINT_TENSORS: u64 = 1 << 20;

/// Open a regular file; its size in bytes.
fn open(path: &Path, what: &str) -> Result<(std::fs::File, u64)> {
    let meta = std::fs::metadata(path).with_context(|| format!("cannot read {what} `{}`", path.display()))?;
    if !meta.is_file() {
        bail!("{what} `{}` is not a regular file", path.display());
    }
    let f = std::fs::File::open(path).with_context(|| format!("cannot read {what} `{}`", path.display()))?;
    Ok((f, meta.len()))
}

/// Read at most `limit` more bytes of `file` onto `buf` (growing it as bytes arrive, never by a
/// size read from a header).
pub fn read_more(file: &mut std::fs::File, buf: &mut Vec<u8>, limit: u64, path: &Path) -> Result<()> {
    file.take(limit).read_to_end(buf).with_context(|| format!("cannot read `{}`", path.display()))?;
    Ok(())
}

/// The tensors of one safetensors file, from its header alone.
pub fn safetensors_header(path: &Path) -> Result<Vec<TensorInfo>> {
    let (mut f, size) = open(path, "safetensors file")?;
    let ctx = || format!("in safetensors file `{}`", path.display());
    let mut buf = Vec::with_capacity(8);
    read_more(&mut f, &mut buf, 8, path)?;
    let n = safetensors::header_len(&buf, size).with_context(ctx)?;
    read_more(&mut f, &mut buf, n, path)?;
    safetensors::parse_header(&buf, size).with_context(ctx)
}

/// The safetensors files of a model folder: the shards `model.safetensors.index.json` names that
/// are present, else every `*.safetensors` there; and how many the index names.
fn shard_files(dir: &Path) -> Result<(Vec<PathBuf>, usize)> {
    let index = dir.join("model.safetensors.index.json");
    if index.is_file() {
        let text = crate::read_text_at_most(&index, "safetensors index", MAX_INDEX_BYTES)?;
        let shards = safetensors::index_shards(&text).with_context(|| format!("in `{}`", index.display()))?;
        // A Hub snapshot holds the index but only the shards someone downloaded.
        let listed = shards.len();
        return Ok((shards.into_iter().map(|s| dir.join(s)).filter(|p| p.exists()).collect(), listed));
    }
    let Ok(entries) = std::fs::read_dir(dir) else { return Ok((Vec::new(), 0)) };
    let mut files: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "safetensors"))
        .take(MAX_SHARDS + 1)
        .collect();
    if files.len() > MAX_SHARDS {
        bail!("model folder `{}` holds more than {MAX_SHARDS} .safetensors files", dir.display());
    }
    files.sort();
    let n = files.len();
    Ok((files, n))
}

/// Read the safetensors headers of a model folder, if it has any, into `spec`: the header
/// dtypes set the weight storage of each class (unless the config's `quantization_config`
/// already does), and a note gives the exact stored bytes against what the config implies.
pub fn apply_safetensors(dir: &Path, spec: &mut ModelSpec) -> Result<()> {
    let (files, listed) = shard_files(dir)?;
    if files.is_empty() {
        return Ok(());
    }
    let (hb, shapes, shape_count) = read_shards(&files, spec, MAX_CHECKPOINT_TENSORS)?;
    let config = match &spec.checkpoint_quant {
        Some(CheckpointQuant::Known { weights, .. }) => Some(*weights),
        _ => None,
    };
    let implied = config.unwrap_or(WeightPrecisions::uniform(Precision::Bf16));
    let mut header = hb.precisions(implied);
    if config.is_none() {
        measure_packed(&hb, spec, &mut header);
    }
    if config.is_none() && header != implied {
        spec.checkpoint_quant = Some(CheckpointQuant::Known {
            method: "safetensors headers".into(),
            weights: header,
            gemm_activations: None,
        });
    }
    let implied_bytes = WeightFootprint::of(spec, &implied).total_bytes();
    let mut note = header_note(&hb, files.len(), implied_bytes, config.is_some(), spec, &header);
    if files.len() < listed {
        note.push_str(&format!(
            "; only {} of the {listed} shards model.safetensors.index.json names are present, so the headers cover part of the weights",
            files.len()
        ));
    }
    if shape_count > 0 {
        let shown: Vec<String> = shapes
            .iter()
            .map(|(n, got, want)| {
                if want.is_empty() {
                    format!("{n} {got:?} (not in the config)")
                } else {
                    format!("{n} {got:?} (config {want:?})")
                }
            })
            .collect();
        let more = if shape_count > 3 { format!(" and {} more", shape_count - 3) } else { String::new() };
        note.push_str(&format!("; shapes differ from the config: {}{more}", shown.join(", ")));
    }
    spec.notes.push(note);
    Ok(())
}

/// A tensor whose header shape differs from the config's: name, header shape, config shape.
type ShapeMismatch = (String, Vec<u64>, Vec<u64>);

/// Read the headers of `files` one at a time, keeping only their sums: the bytes per class, the
/// first three shape mismatches against `spec` and how many there are. More than `max_tensors`
/// tensors in all is refused.
fn read_shards(
    files: &[PathBuf],
    spec: &ModelSpec,
    max_tensors: u64,
) -> Result<(HeaderBytes, Vec<ShapeMismatch>, usize)> {
    let mut hb = HeaderBytes::default();
    let (mut shown, mut count) = (Vec::new(), 0);
    for f in files {
        let tensors = safetensors_header(f)?;
        hb.add(&tensors);
        if hb.tensors > max_tensors {
            bail!(
                "in safetensors file `{}`: the checkpoint holds more than {max_tensors} tensors (the limit of one checkpoint)",
                f.display()
            );
        }
        let shapes = safetensors::shape_mismatches(spec, &tensors);
        count += shapes.len();
        shown.extend(shapes.into_iter().take(3usize.saturating_sub(shown.len())));
    }
    Ok((hb, shown, count))
}

/// A class whose main dtype is an integer (packed GPTQ/AWQ words, bytes of nibbles) in a
/// checkpoint whose config has no `quantization_config` to say what they hold: stored at the
/// measured width `8 × header bytes ÷ the class's parameters in the config`, so the ledger's bytes
/// for the class are the header's.
fn measure_packed(hb: &HeaderBytes, spec: &ModelSpec, header: &mut WeightPrecisions) {
    // At fp32 every parameter, matrix or vector, is 4 bytes: the footprint ÷ 4 counts them.
    let params = WeightFootprint::of(spec, &WeightPrecisions::uniform(Precision::Fp32));
    let slots: [(&str, f64, &mut Precision); 7] = [
        ("attention", params.attention_bytes, &mut header.attention),
        ("mlp", params.mlp_bytes, &mut header.mlp),
        ("experts", params.experts_bytes, &mut header.experts),
        ("shared", params.shared_experts_bytes, &mut header.shared_experts),
        ("router", params.router_bytes, &mut header.router),
        ("embedding", params.embedding_bytes, &mut header.embedding),
        ("lm_head", params.lm_head_bytes, &mut header.lm_head),
    ];
    for (class, fp32_bytes, slot) in slots {
        let packed = hb.main_dtype(class).is_some_and(|d| d.precision().is_none());
        let bytes = hb.by_class.iter().find(|(c, _)| *c == class).map_or(0, |(_, b)| *b);
        if packed && fp32_bytes > 0.0 {
            if let Some(p) = Precision::from_bits(32.0 * bytes as f64 / fp32_bytes) {
                *slot = p;
            }
        }
    }
}

/// `weights from checkpoint headers: N bytes (config implies M) …`, with the classes whose bytes
/// differ from the config's count by more than 1 %.
fn header_note(
    hb: &HeaderBytes,
    files: usize,
    implied_bytes: f64,
    config_quant: bool,
    spec: &ModelSpec,
    header: &WeightPrecisions,
) -> String {
    let fp = WeightFootprint::of(spec, header);
    let expected = |class: &str| match class {
        "embedding" => fp.embedding_bytes,
        "attention" => fp.attention_bytes,
        "mlp" => fp.mlp_bytes,
        "experts" => fp.experts_bytes,
        "shared" => fp.shared_experts_bytes,
        "router" => fp.router_bytes,
        "norm" => fp.norm_bytes,
        "lm_head" => fp.lm_head_bytes,
        _ => 0.0,
    };
    let mut s = format!(
        "weights from checkpoint headers: {} bytes in {} tensors of {files} file(s) (config implies {:.0} bytes)",
        hb.total_bytes, hb.tensors, implied_bytes
    );
    let stored: Vec<String> =
        hb.by_class.iter().filter_map(|(c, _)| hb.main_dtype(c).map(|d| format!("{c} {}", d.name()))).collect();
    s.push_str(&format!("; stored as {}", stored.join(", ")));
    s.push_str(if config_quant {
        "; the ledger keeps the storage of the config's quantization_config"
    } else {
        "; the ledger stores each class at its header dtype"
    });
    let mismatches: Vec<String> = hb
        .by_class
        .iter()
        .filter(|(c, b)| {
            let e = expected(c);
            (*b as f64 - e).abs() > 0.01 * e.max(1.0)
        })
        .map(|(c, b)| format!("{c} {b} vs {:.0}", expected(c)))
        .collect();
    if !mismatches.is_empty() {
        s.push_str(&format!(
            "; differs from the config by class (headers vs config, bytes): {}",
            mismatches.join(", ")
        ));
    }
    if hb.unplaced_tensors > 0 {
        let shown: Vec<&str> = hb.unplaced.iter().map(String::as_str).collect();
        s.push_str(&format!(
            "; {} tensor(s) not in the config's modules: {}{}",
            hb.unplaced_tensors,
            shown.join(", "),
            if hb.unplaced_tensors > shown.len() as u64 { ", …" } else { "" }
        ));
    }
    s
}

/// Largest GGUF header read, bytes: 64 MiB, six times the largest real one (a 256k-token
/// vocabulary with its merges is about 10 MB). The header is read whole before it is parsed, and
/// a string or array in it may declare a length up to the file's size, bytes that are present (a
/// sparse file reads as zeros): the cap bounds what one declared length can make this process
/// read and hold (one 200 MB metadata key in a 300 MB sparse file once took 1.35 GB and 110 s).
const MAX_GGUF_HEADER_BYTES: u64 = 64 << 20;

/// The model of a GGUF file, from its header alone (read in growing pieces until the header
/// ends), named by its path, with a note giving the exact stored weight bytes.
pub fn gguf_model(path: &Path) -> Result<ModelSpec> {
    use llm_ledger_core::model::gguf::{self, Parsed};
    let (mut f, size) = open(path, "GGUF file")?;
    let ctx = || format!("in GGUF file `{}`", path.display());
    let mut buf = Vec::new();
    let mut want = (1u64 << 20).min(size);
    let g = loop {
        let have = buf.len() as u64;
        read_more(&mut f, &mut buf, want - have, path)?;
        match gguf::parse(&buf, size).with_context(ctx)? {
            Parsed::Done(g) => break g,
            Parsed::NeedMore(n) if n > MAX_GGUF_HEADER_BYTES => {
                bail!(
                    "in GGUF file `{}`: the header is larger than the {} MiB limit",
                    path.display(),
                    MAX_GGUF_HEADER_BYTES >> 20
                )
            }
            Parsed::NeedMore(n) if (buf.len() as u64) < want => {
                bail!("in GGUF file `{}`: the file ended while reading the header (needs {n} bytes)", path.display())
            }
            Parsed::NeedMore(n) => want = n.max(want.saturating_mul(2)).min(size).min(MAX_GGUF_HEADER_BYTES),
        }
    };
    let label = path.display().to_string();
    let mut spec = gguf::model(&g, &label).with_context(ctx)?;
    let implied = WeightFootprint::of(&spec, &WeightPrecisions::uniform(Precision::Bf16)).total_bytes();
    let mut types: Vec<(&str, u64)> = Vec::new();
    for t in &g.tensors {
        match types.iter_mut().find(|(n, _)| *n == t.ggml.name) {
            Some(e) => e.1 = e.1.saturating_add(t.bytes),
            None => types.push((t.ggml.name, t.bytes)),
        }
    }
    let types: Vec<String> = types.iter().map(|(n, b)| format!("{n} {b}")).collect();
    spec.notes.push(format!(
        "weights from checkpoint headers: {} bytes in {} tensors of 1 file(s) (config implies {implied:.0} bytes at bf16); by ggml type (bytes): {}; the ledger stores each class at its tensors' mean width",
        g.weight_bytes(),
        g.tensors.len(),
        types.join(", ")
    ));
    Ok(spec)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::alloc::{GlobalAlloc, Layout, System};
    use std::cell::Cell;

    /// The system allocator, counting each thread's live bytes and their peak, so that a test can
    /// say how much one call held at most.
    struct Counting;

    thread_local! {
        static LIVE: Cell<usize> = const { Cell::new(0) };
        static PEAK: Cell<usize> = const { Cell::new(0) };
    }

    // SAFETY: every call is forwarded to `System` unchanged; the counters are plain thread-local
    // cells that allocate nothing.
    unsafe impl GlobalAlloc for Counting {
        unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
            let _ = LIVE.try_with(|l| {
                l.set(l.get() + layout.size());
                let _ = PEAK.try_with(|p| p.set(p.get().max(l.get())));
            });
            // SAFETY: the caller's contract, passed on.
            unsafe { System.alloc(layout) }
        }

        unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
            let _ = LIVE.try_with(|l| l.set(l.get().saturating_sub(layout.size())));
            // SAFETY: the caller's contract, passed on.
            unsafe { System.dealloc(ptr, layout) }
        }
    }

    #[global_allocator]
    static COUNTING: Counting = Counting;

    /// `f`'s result and the most bytes this thread held above what it held before.
    fn peak_bytes<T>(f: impl FnOnce() -> T) -> (T, usize) {
        let before = LIVE.with(Cell::get);
        PEAK.with(|p| p.set(before));
        let out = f();
        (out, PEAK.with(Cell::get) - before)
    }

    /// A GGUF v3 header declaring `tensors` tensors and `entries` metadata entries, the first
    /// with a key of `key_bytes` bytes.
    fn gguf_declaring(tensors: u64, entries: u64, key_bytes: u64) -> Vec<u8> {
        let mut h = b"GGUF".to_vec();
        h.extend(3u32.to_le_bytes());
        h.extend(tensors.to_le_bytes());
        h.extend(entries.to_le_bytes());
        h.extend(key_bytes.to_le_bytes());
        h
    }

    /// Counts and lengths a header declares are checked before anything is read or held by them:
    /// a 96-byte file declaring 2²⁰ tensors, 2²⁰ entries and a 2⁴⁰-byte key is refused at once,
    /// and a 300 MB sparse file whose first string value declares 200 MB (bytes that are there, as
    /// zeros) is refused by the header cap before it is read, where it once took 1.35 GB and 110 s.
    #[test]
    fn a_gguf_header_declaring_huge_counts_is_refused_without_holding_them() {
        let dir = std::env::temp_dir().join(format!("llm-ledger-gguf-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let small = dir.join("huge-counts.gguf");
        let mut bytes = gguf_declaring(1 << 20, 1 << 20, 1 << 40);
        bytes.resize(96, 0);
        std::fs::write(&small, &bytes).unwrap();
        let (e, peak) = peak_bytes(|| format!("{:#}", gguf_model(&small).unwrap_err()));
        assert!(e.contains("invalid `metadata key`: 1099511627776 bytes (at most 65535 bytes)"), "{e}");
        assert!(peak < 64 << 10, "{peak} bytes held for a 96-byte file");

        // A key is at most 65,535 bytes (the specification), refused before it is read; a string
        // value may be long, so a 200 MB one runs into the header cap.
        let sparse = dir.join("sparse-key.gguf");
        let f = std::fs::File::create(&sparse).unwrap();
        let mut header = gguf_declaring(0, 1, 1);
        header.push(b'a');
        header.extend(8u32.to_le_bytes());
        header.extend((200u64 << 20).to_le_bytes());
        std::io::Write::write_all(&mut &f, &header).unwrap();
        f.set_len(300 << 20).unwrap();
        drop(f);
        let started = std::time::Instant::now();
        let (e, peak) = peak_bytes(|| format!("{:#}", gguf_model(&sparse).unwrap_err()));
        assert!(e.ends_with("sparse-key.gguf`: the header is larger than the 64 MiB limit"), "{e}");
        assert!(peak < 8 << 20, "{peak} bytes held for a header that declares 200 MB");
        assert!(started.elapsed().as_secs() < 10, "{:?}", started.elapsed());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Shards past the checkpoint's tensor cap are refused as they are read (each shard's tensors
    /// dropped once summed), where 64 shards of 100,000 tensors once took 1.37 GB.
    #[test]
    fn shards_past_the_tensor_cap_are_refused() {
        let dir = std::env::temp_dir().join(format!("llm-ledger-shards-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let files: Vec<PathBuf> = (0..3)
            .map(|s| {
                let names = (0..4).map(|i| (format!("model.layers.{s}.mlp.experts.{i}.up_proj.weight"), "U8", vec![2]));
                let (mut bytes, size) = llm_ledger_core::testing::safetensors_header(names);
                bytes.resize(size as usize, 0);
                let p = dir.join(format!("model-{s}.safetensors"));
                std::fs::write(&p, bytes).unwrap();
                p
            })
            .collect();
        let spec = (*llm_ledger_core::Catalog::builtin().preset("llama-3-8b").unwrap().spec()).clone();
        let (hb, _, _) = read_shards(&files, &spec, 12).unwrap();
        assert_eq!((hb.tensors, hb.total_bytes), (12, 24));
        let e = read_shards(&files, &spec, 10).unwrap_err().to_string();
        assert!(
            e.ends_with(
                "model-2.safetensors`: the checkpoint holds more than 10 tensors (the limit of one checkpoint)"
            ),
            "{e}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
