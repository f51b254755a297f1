//! safetensors checkpoint headers → every tensor's dtype, shape and stored bytes.
//!
//! The format (huggingface/safetensors, `docs/source/index.mdx` "Format"): an 8-byte
//! little-endian `u64` N, then N bytes of UTF-8 JSON mapping each tensor name to
//! `{"dtype": "BF16", "shape": [..], "data_offsets": [begin, end]}` (offsets relative to the byte
//! after the header; an optional `"__metadata__"` map of strings), then the tensor data. Only the
//! header is parsed here; the caller hands over at most `8 + N` bytes, and N is checked against
//! [`MAX_HEADER_BYTES`] and the file's size before anything is read or allocated.
//!
//! A tensor's bytes are `⌈elements × bits(dtype) ÷ 8⌉` and must equal `end − begin`; packed
//! quantised weights (`I32` GPTQ/AWQ `qweight`, `U8` nibbles), their scales and zero points are
//! tensors like any other, so the sum over tensors is the exact stored weight size.

use super::quant::WeightPrecisions;
use crate::error::{Error, Result};
use crate::precision::Precision;
use serde::Serialize;
use serde_json::{Map, Value};

/// Largest header accepted, bytes (the `safetensors` crate's own `MAX_HEADER_SIZE` is 100 MB).
pub const MAX_HEADER_BYTES: u64 = 100_000_000;
/// Largest `model.safetensors.index.json` read, bytes: 32 MiB, over three times DeepSeek-V3's
/// (91,991 tensors in about 9 MB, the largest index of a published model).
pub const MAX_INDEX_BYTES: usize = 32 << 20;
/// Most dimensions a tensor may have.
const MAX_RANK: usize = 8;
/// Largest element count of one tensor, 2⁴⁸ (a 256 Ti-element tensor; bounds the arithmetic).
const MAX_TENSOR_ELEMENTS: u64 = 1 << 48;

/// A safetensors element type (`dtype` in the header).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub enum Dtype {
    /// BOOL, U8, I8 — 8 bits.
    Byte(&'static str),
    /// F8_E4M3, F8_E5M2, F8_E8M0 — 8-bit floats.
    F8(&'static str),
    /// F16.
    F16,
    /// BF16.
    Bf16,
    /// F32.
    F32,
    /// F4 (e2m1, packed two per byte).
    F4,
    /// F6_E2M3, F6_E3M2.
    F6(&'static str),
    /// I16, U16, I32, U32, I64, U64, F64 (integers hold packed quantised values).
    Other(&'static str, u32),
}

/// The dtype names this parser knows, with their bits per element.
const DTYPES: &[(&str, u32)] = &[
    ("BOOL", 8),
    ("U8", 8),
    ("I8", 8),
    ("F8_E4M3", 8),
    ("F8_E5M2", 8),
    ("F8_E8M0", 8),
    ("F4", 4),
    ("F6_E2M3", 6),
    ("F6_E3M2", 6),
    ("I16", 16),
    ("U16", 16),
    ("F16", 16),
    ("BF16", 16),
    ("I32", 32),
    ("U32", 32),
    ("F32", 32),
    ("I64", 64),
    ("U64", 64),
    ("F64", 64),
];

impl Dtype {
    /// The bits per element of the dtype named `s` (`"BF16"` → 16), if it is one.
    pub fn bits_of(s: &str) -> Option<u32> {
        DTYPES.iter().find(|(n, _)| *n == s).map(|(_, b)| *b)
    }

    fn parse(s: &str) -> Option<Dtype> {
        let (name, bits) = DTYPES.iter().find(|(n, _)| *n == s).copied()?;
        Some(match name {
            "BOOL" | "U8" | "I8" => Dtype::Byte(name),
            "F8_E4M3" | "F8_E5M2" | "F8_E8M0" => Dtype::F8(name),
            "F16" => Dtype::F16,
            "BF16" => Dtype::Bf16,
            "F32" => Dtype::F32,
            "F4" => Dtype::F4,
            "F6_E2M3" | "F6_E3M2" => Dtype::F6(name),
            _ => Dtype::Other(name, bits),
        })
    }

    /// Bits per element.
    pub fn bits(self) -> u32 {
        match self {
            Dtype::Byte(_) | Dtype::F8(_) => 8,
            Dtype::F16 | Dtype::Bf16 => 16,
            Dtype::F32 => 32,
            Dtype::F4 => 4,
            Dtype::F6(_) => 6,
            Dtype::Other(_, b) => b,
        }
    }

    /// The name as the header writes it.
    pub fn name(self) -> &'static str {
        match self {
            Dtype::Byte(n) | Dtype::F8(n) | Dtype::F6(n) | Dtype::Other(n, _) => n,
            Dtype::F16 => "F16",
            Dtype::Bf16 => "BF16",
            Dtype::F32 => "F32",
            Dtype::F4 => "F4",
        }
    }

    /// The ledger's storage precision for a float weight of this dtype; `None` for integer
    /// dtypes, whose meaning (int8, packed int4 …) only the config's `quantization_config` tells.
    pub fn precision(self) -> Option<Precision> {
        match self {
            Dtype::F32 => Some(Precision::Fp32),
            Dtype::Bf16 => Some(Precision::Bf16),
            Dtype::F16 => Some(Precision::Fp16),
            Dtype::F8("F8_E4M3" | "F8_E5M2") => Some(Precision::Fp8),
            Dtype::F4 => Some(Precision::Fp4),
            _ => None,
        }
    }
}

/// One tensor of a header.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TensorInfo {
    /// Its name (`model.layers.0.self_attn.q_proj.weight`).
    pub name: String,
    /// Element type.
    pub dtype: Dtype,
    /// Dimensions.
    pub shape: Vec<u64>,
    /// Product of the dimensions.
    pub elements: u64,
    /// Stored bytes, `⌈elements × bits ÷ 8⌉` (= `end − begin` of its data offsets).
    pub bytes: u64,
}

/// The header length N of a safetensors file of `file_bytes` bytes whose first 8 bytes are
/// `prefix`: checked against [`MAX_HEADER_BYTES`] and the file size, so a caller may then read
/// `8 + N` bytes.
pub fn header_len(prefix: &[u8], file_bytes: u64) -> Result<u64> {
    let Some(len) = prefix.get(..8) else {
        return Err(Error::invalid(
            "header length",
            format!("{} bytes", prefix.len()),
            "an 8-byte little-endian length",
        ));
    };
    let n = u64::from_le_bytes(len.try_into().expect("8 bytes"));
    if n > MAX_HEADER_BYTES {
        return Err(Error::invalid("header length", n, format!("at most {MAX_HEADER_BYTES} bytes")));
    }
    if n.checked_add(8).is_none_or(|end| end > file_bytes) {
        return Err(Error::invalid(
            "header length",
            n,
            format!("at most the file's {} bytes after the 8-byte length", file_bytes.saturating_sub(8)),
        ));
    }
    Ok(n)
}

/// Most tensors one header may hold: 2¹⁸ = 262,144 (DeepSeek-V3 has 91,991 tensors in all, a
/// few thousand per shard), so a hostile header is refused before its tensors are kept.
pub const MAX_HEADER_TENSORS: usize = 1 << 18;
/// Largest JSON text of one tensor's entry, bytes (a real one is under 200 bytes: a dtype, at most
/// [`MAX_RANK`] dimensions and two offsets); a longer one is refused unparsed.
const MAX_ENTRY_BYTES: usize = 4096;

/// One tensor's entry as a header writes it: the fast path of [`parse_header`], borrowing the
/// dtype from the header text.
#[derive(serde::Deserialize)]
struct Entry<'a> {
    #[serde(borrow)]
    dtype: &'a str,
    shape: Vec<u64>,
    data_offsets: [u64; 2],
}

/// The top-level map of a header as `(name, entry text)` pairs borrowed from the header, at most
/// [`MAX_HEADER_TENSORS`] of them plus `__metadata__`.
struct Entries<'a>(Vec<(std::borrow::Cow<'a, str>, &'a serde_json::value::RawValue)>);

impl<'de> serde::Deserialize<'de> for Entries<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Entries<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> std::result::Result<Entries<'de>, A::Error> {
                let (mut out, mut tensors) = (Vec::new(), 0usize);
                while let Some(key) = map.next_key::<Key<'de>>()? {
                    if key.0 != "__metadata__" {
                        tensors += 1;
                        if tensors > MAX_HEADER_TENSORS {
                            return Err(serde::de::Error::custom(TOO_MANY));
                        }
                    }
                    out.push((key.0, map.next_value()?));
                }
                Ok(Entries(out))
            }
        }
        d.deserialize_map(V)
    }
}

/// The message [`Entries`] stops with past [`MAX_HEADER_TENSORS`].
const TOO_MANY: &str = "too many tensors";

/// A map key, borrowed from the text unless it holds escapes.
struct Key<'a>(std::borrow::Cow<'a, str>);

impl<'de> serde::Deserialize<'de> for Key<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> std::result::Result<Key<'de>, E> {
                Ok(Key(std::borrow::Cow::Borrowed(v)))
            }
            fn visit_str<E>(self, v: &str) -> std::result::Result<Key<'de>, E> {
                Ok(Key(std::borrow::Cow::Owned(v.to_string())))
            }
        }
        d.deserialize_str(V)
    }
}

/// Parse a header: `bytes` is the file's first `8 + N` bytes (or more), `file_bytes` the file's
/// size. Tensors come back in the order of their data offsets.
///
/// Time and memory are linear in the header: the JSON is scanned once into `(name, entry)` slices
/// of the header text (refused past [`MAX_HEADER_TENSORS`]), each entry parsed into its typed
/// fields without an intermediate JSON tree (an entry that does not parse so is parsed again, on
/// its own, only to word its error), the duplicates found with a hash set and the overlaps by one
/// sort.
pub fn parse_header(bytes: &[u8], file_bytes: u64) -> Result<Vec<TensorInfo>> {
    let n = header_len(bytes, file_bytes)?;
    let Some(json) = bytes.get(8..8 + n as usize) else {
        return Err(Error::invalid(
            "header",
            format!("{} bytes", bytes.len().saturating_sub(8)),
            format!("the {n} bytes the header length gives"),
        ));
    };
    let malformed = |message: String| Error::Malformed { what: "safetensors header".into(), message };
    let text = std::str::from_utf8(json).map_err(|e| malformed(format!("not UTF-8 text ({e})")))?;
    let entries: Entries = serde_json::from_str(text).map_err(|e| {
        let message = e.to_string();
        if message.starts_with(TOO_MANY) {
            Error::invalid(
                "header",
                format!("more than {MAX_HEADER_TENSORS} tensors"),
                format!("at most {MAX_HEADER_TENSORS} tensors in one header"),
            )
        } else if message.starts_with("invalid type: ") {
            malformed("not a JSON object".into())
        } else {
            malformed(message)
        }
    })?;
    let data_bytes = file_bytes - 8 - n;
    let mut seen = std::collections::HashSet::with_capacity(entries.0.len());
    let mut out = Vec::with_capacity(entries.0.len());
    let mut spans = Vec::with_capacity(entries.0.len());
    for (name, raw) in &entries.0 {
        if name == "__metadata__" {
            continue;
        }
        let shown = super::gguf::printable(name);
        if !seen.insert(name.as_ref()) {
            return Err(Error::invalid(shown, "named twice in the header", "one entry per tensor"));
        }
        let entry = raw.get();
        if entry.len() > MAX_ENTRY_BYTES {
            return Err(Error::invalid(
                shown,
                format!("an entry of {} bytes", entry.len()),
                format!("at most {MAX_ENTRY_BYTES} bytes: {{dtype, shape, data_offsets}}"),
            ));
        }
        let (info, span) = match serde_json::from_str::<Entry>(entry) {
            Ok(e) => typed(shown, e, data_bytes)?,
            // Worded by the general path, on this entry alone.
            Err(_) => {
                let v: Value = serde_json::from_str(entry).map_err(|e| malformed(e.to_string()))?;
                tensor(&shown, &v, data_bytes)?
            }
        };
        out.push(info);
        spans.push(span);
    }
    let mut order: Vec<usize> = (0..out.len()).collect();
    order.sort_unstable_by_key(|&i| spans[i]);
    for w in order.windows(2) {
        if spans[w[0]].1 > spans[w[1]].0 {
            return Err(Error::invalid(
                format!("{}.data_offsets", out[w[1]].name),
                format!("{:?}", [spans[w[1]].0, spans[w[1]].1]),
                format!("not overlapping {} ({:?})", out[w[0]].name, [spans[w[0]].0, spans[w[0]].1]),
            ));
        }
    }
    let mut sorted: Vec<Option<TensorInfo>> = out.into_iter().map(Some).collect();
    Ok(order.into_iter().filter_map(|i| sorted[i].take()).collect())
}

/// A tensor from its typed entry, checked as [`tensor`] checks one.
fn typed(name: String, e: Entry, data_bytes: u64) -> Result<(TensorInfo, (u64, u64))> {
    let field = |f: &str| format!("{name}.{f}");
    let dtype = Dtype::parse(e.dtype).ok_or_else(|| {
        Error::unknown_for(field("dtype"), "dtype", super::gguf::printable(e.dtype), DTYPES.iter().map(|(n, _)| *n))
    })?;
    if e.shape.len() > MAX_RANK {
        return Err(Error::invalid(
            field("shape"),
            short(&Value::from(e.shape.clone())),
            format!("a list of at most {MAX_RANK} non-negative integers"),
        ));
    }
    checked_tensor(name, dtype, e.dtype, e.shape, e.data_offsets, data_bytes)
}

fn tensor(name: &str, t: &Value, data_bytes: u64) -> Result<(TensorInfo, (u64, u64))> {
    let field = |f: &str| format!("{name}.{f}");
    let Value::Object(o) = t else {
        return Err(Error::invalid(name, "not an object", "{dtype, shape, data_offsets}"));
    };
    let get = |k: &str| {
        o.get(k).ok_or_else(|| Error::MissingField { field: field(k), context: "a safetensors header".into() })
    };
    let dtype_s =
        get("dtype")?.as_str().ok_or_else(|| Error::invalid(field("dtype"), "not a string", "a dtype name"))?;
    let dtype = Dtype::parse(dtype_s).ok_or_else(|| {
        Error::unknown_for(field("dtype"), "dtype", super::gguf::printable(dtype_s), DTYPES.iter().map(|(n, _)| *n))
    })?;
    let shape = u64_list(get("shape")?, &field("shape"), MAX_RANK)?;
    let offs = u64_list(get("data_offsets")?, &field("data_offsets"), 2)?;
    let [begin, end] = offs[..] else {
        return Err(Error::invalid(field("data_offsets"), format!("{offs:?}"), "[begin, end]"));
    };
    checked_tensor(name.to_string(), dtype, dtype_s, shape, [begin, end], data_bytes)
}

/// A tensor whose fields parsed: its elements within [`MAX_TENSOR_ELEMENTS`], its span inside
/// the data and `⌈elements × bits ÷ 8⌉` bytes long.
fn checked_tensor(
    name: String,
    dtype: Dtype,
    dtype_s: &str,
    shape: Vec<u64>,
    [begin, end]: [u64; 2],
    data_bytes: u64,
) -> Result<(TensorInfo, (u64, u64))> {
    let field = |f: &str| format!("{name}.{f}");
    let elements = shape.iter().try_fold(1u64, |acc, d| acc.checked_mul(*d).filter(|e| *e <= MAX_TENSOR_ELEMENTS));
    let elements = elements.ok_or_else(|| {
        Error::invalid(field("shape"), format!("{shape:?}"), format!("at most {MAX_TENSOR_ELEMENTS} elements"))
    })?;
    let bytes = (elements * dtype.bits() as u64).div_ceil(8);
    let offs = [begin, end];
    if begin > end || end > data_bytes {
        return Err(Error::invalid(
            field("data_offsets"),
            format!("{offs:?}"),
            format!("begin ≤ end ≤ the {data_bytes} data bytes after the header"),
        ));
    }
    if end - begin != bytes {
        return Err(Error::invalid(
            field("data_offsets"),
            format!("{offs:?}"),
            format!("a span of {bytes} bytes for {dtype_s} {shape:?}"),
        ));
    }
    Ok((TensorInfo { name, dtype, shape, elements, bytes }, (begin, end)))
}

fn u64_list(v: &Value, field: &str, max_len: usize) -> Result<Vec<u64>> {
    let expected = || format!("a list of at most {max_len} non-negative integers");
    let a = v.as_array().filter(|a| a.len() <= max_len).ok_or_else(|| Error::invalid(field, short(v), expected()))?;
    a.iter().map(|x| x.as_u64().ok_or_else(|| Error::invalid(field, short(v), expected()))).collect()
}

/// A value echoed in an error, cut to 60 characters.
fn short(v: &Value) -> String {
    let s = v.to_string();
    match s.char_indices().nth(60) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s,
    }
}

/// The module class of a tensor by its Hugging Face name (the classes of [`WeightPrecisions`],
/// plus `norm` and `other`).
pub fn class_of(name: &str) -> &'static str {
    let has = |s: &str| name.contains(s);
    if has("norm") || has("ln_") {
        "norm"
    } else if has("embed_tokens") || has("wte") || has("wpe") || has("word_embeddings") || has("embed_positions") {
        "embedding"
    } else if has("lm_head") {
        "lm_head"
    } else if has("shared_expert") {
        "shared"
    } else if has(".experts.") {
        "experts"
    } else if name.split('.').any(|s| s == "gate") || has("router") {
        "router"
    } else if has("attn") || has("attention") {
        "attention"
    } else if has("mlp") || has("feed_forward") {
        "mlp"
    } else {
        "other"
    }
}

/// Stored bytes of a checkpoint per module class, from its headers.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct HeaderBytes {
    /// Every tensor's bytes.
    pub total_bytes: u64,
    /// Tensors counted.
    pub tensors: u64,
    /// `(class, bytes)` for each class of [`class_of`] present.
    pub by_class: Vec<(&'static str, u64)>,
    /// `(class, dtype, bytes)`: the bytes of each dtype within each class.
    pub by_class_dtype: Vec<(&'static str, Dtype, u64)>,
    /// The first [`UNPLACED_SHOWN`] tensors [`class_of`] could not place.
    pub unplaced: Vec<String>,
    /// How many tensors [`class_of`] could not place.
    pub unplaced_tensors: u64,
}

/// Names of unplaced tensors [`HeaderBytes`] keeps (a note shows them; the rest are counted).
pub const UNPLACED_SHOWN: usize = 3;

impl HeaderBytes {
    /// Sum the tensors of one or more headers.
    pub fn of<'a>(tensors: impl IntoIterator<Item = &'a TensorInfo>) -> HeaderBytes {
        let mut h = HeaderBytes::default();
        h.add(tensors);
        h
    }

    /// Add the tensors of one more header (a shard), so shards are summed one at a time.
    pub fn add<'a>(&mut self, tensors: impl IntoIterator<Item = &'a TensorInfo>) {
        let h = self;
        for t in tensors {
            let class = class_of(&t.name);
            h.total_bytes += t.bytes;
            h.tensors += 1;
            match h.by_class.iter_mut().find(|(c, _)| *c == class) {
                Some(e) => e.1 += t.bytes,
                None => h.by_class.push((class, t.bytes)),
            }
            match h.by_class_dtype.iter_mut().find(|(c, d, _)| *c == class && *d == t.dtype) {
                Some(e) => e.2 += t.bytes,
                None => h.by_class_dtype.push((class, t.dtype, t.bytes)),
            }
            if class == "other" {
                h.unplaced_tensors += 1;
                if h.unplaced.len() < UNPLACED_SHOWN {
                    h.unplaced.push(t.name.clone());
                }
            }
        }
    }

    /// The dtype holding most bytes in `class`.
    pub fn main_dtype(&self, class: &str) -> Option<Dtype> {
        self.by_class_dtype.iter().filter(|(c, _, _)| *c == class).max_by_key(|(_, _, b)| *b).map(|(_, d, _)| *d)
    }

    /// The storage precisions the headers show: each GEMM class at the precision of its main
    /// dtype when that is a float format, else as in `fallback` (the config's).
    pub fn precisions(&self, fallback: WeightPrecisions) -> WeightPrecisions {
        let p = |class: &str, f: Precision| self.main_dtype(class).and_then(Dtype::precision).unwrap_or(f);
        WeightPrecisions {
            attention: p("attention", fallback.attention),
            mlp: p("mlp", fallback.mlp),
            experts: p("experts", fallback.experts),
            shared_experts: p("shared", fallback.shared_experts),
            router: p("router", fallback.router),
            embedding: p("embedding", fallback.embedding),
            lm_head: p("lm_head", fallback.lm_head),
        }
    }
}

/// The shape `[out, in]` the config implies for a weight tensor of Hugging Face Llama-style
/// naming (`model.embed_tokens`, `lm_head`, `model.layers.N.self_attn.{q,k,v,o}_proj`,
/// `model.layers.N.mlp.{gate,up,down}_proj`, `mlp.experts.E.*`, Mixtral's
/// `block_sparse_moe.experts.E.w1/w2/w3` and the routers), or `None` for names it does not
/// model. A layer index past the config's layers implies the empty shape `[]`.
pub fn expected_shape(spec: &super::spec::ModelSpec, name: &str) -> Option<Vec<u64>> {
    use super::spec::{Attention, Mlp};
    let h = spec.hidden_size;
    let name = name.strip_suffix(".weight")?;
    match name {
        "model.embed_tokens" | "lm_head" => return Some(vec![spec.embedding.vocab, spec.embedding.dim]),
        _ => {}
    }
    let rest = name.strip_prefix("model.layers.")?;
    let (i, rest) = rest.split_once('.')?;
    let i: usize = i.parse().ok()?;
    let Some(layer) = spec.layers().get(i) else { return Some(vec![]) };
    let (q, kv) = match &layer.attention {
        Attention::Standard(a) => (a.q_dim(), a.kv_dim()),
        _ => (0, 0),
    };
    let dense = |w: u64, proj: &str| match proj {
        "gate_proj" | "up_proj" | "w1" | "w3" => Some(vec![w, h]),
        "down_proj" | "w2" => Some(vec![h, w]),
        _ => None,
    };
    match (rest.split('.').collect::<Vec<_>>().as_slice(), &layer.mlp) {
        (["self_attn", p], _) if q > 0 => match *p {
            "q_proj" => Some(vec![q, h]),
            "k_proj" | "v_proj" => Some(vec![kv, h]),
            "o_proj" => Some(vec![h, q]),
            _ => None,
        },
        (["mlp", p], Mlp::Dense(d)) => dense(d.intermediate, p),
        (["mlp" | "block_sparse_moe", "gate"], Mlp::Moe(m)) => Some(vec![m.experts, h]),
        (["mlp" | "block_sparse_moe", "experts", e, p], Mlp::Moe(m)) => {
            if e.parse::<u64>().ok()? >= m.experts {
                return Some(vec![]);
            }
            dense(m.expert.intermediate, p)
        }
        _ => None,
    }
}

/// Float weight tensors whose shape differs from what the config implies
/// ([`expected_shape`]), as `(name, header shape, config shape)`. Packed integer tensors are not
/// compared (their shapes follow the quantiser's packing).
pub fn shape_mismatches(spec: &super::spec::ModelSpec, tensors: &[TensorInfo]) -> Vec<(String, Vec<u64>, Vec<u64>)> {
    tensors
        .iter()
        .filter(|t| t.dtype.precision().is_some())
        .filter_map(|t| {
            expected_shape(spec, &t.name).filter(|e| *e != t.shape).map(|e| (t.name.clone(), t.shape.clone(), e))
        })
        .collect()
}

/// Most shard files a checkpoint may have (an index naming more, or a folder holding more, is
/// refused): 4,096, 25 times DeepSeek-V3's 163.
pub const MAX_SHARDS: usize = 4096;

/// The shard files a `model.safetensors.index.json` maps its tensors to (`weight_map`), each once,
/// sorted; time linear in the index (a hash set finds the repeats), at most [`MAX_SHARDS`].
pub fn index_shards(text: &str) -> Result<Vec<String>> {
    let v: Value = serde_json::from_str(text)
        .map_err(|e| Error::Malformed { what: "model.safetensors.index.json".into(), message: e.to_string() })?;
    let map: &Map<String, Value> = v.get("weight_map").and_then(Value::as_object).ok_or_else(|| {
        Error::MissingField { field: "weight_map".into(), context: "model.safetensors.index.json".into() }
    })?;
    let mut shards: std::collections::HashSet<&str> = std::collections::HashSet::new();
    for (tensor, f) in map {
        let f = f.as_str().ok_or_else(|| Error::invalid(format!("weight_map.{tensor}"), short(f), "a file name"))?;
        let plain = !f.is_empty()
            && !f.contains(['/', '\\'])
            && f != ".."
            && !f.starts_with('.')
            && f.ends_with(".safetensors");
        if !plain {
            return Err(Error::invalid(
                format!("weight_map.{tensor}"),
                format!("{f:?}"),
                "a .safetensors file name in the same folder",
            ));
        }
        if shards.insert(f) && shards.len() > MAX_SHARDS {
            return Err(Error::invalid(
                "weight_map",
                format!("more than {MAX_SHARDS} shard files"),
                format!("at most {MAX_SHARDS}"),
            ));
        }
    }
    let mut shards: Vec<String> = shards.into_iter().map(str::to_string).collect();
    shards.sort_unstable();
    Ok(shards)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A safetensors file's bytes: header of `tensors` (name, dtype, shape) then zero data.
    pub(super) fn file(tensors: &[(&str, &str, &[u64])]) -> Vec<u8> {
        let mut header = serde_json::Map::new();
        let mut at = 0u64;
        for (name, dtype, shape) in tensors {
            let bits = DTYPES.iter().find(|(n, _)| n == dtype).map(|(_, b)| *b as u64).unwrap_or(8);
            // An absurd shape (a bad-input case) gets no data.
            let len = shape.iter().try_fold(bits, |a, d| a.checked_mul(*d)).map_or(0, |b| b.div_ceil(8));
            header.insert(
                name.to_string(),
                serde_json::json!({"dtype": dtype, "shape": shape, "data_offsets": [at, at + len]}),
            );
            at += len;
        }
        let json = serde_json::to_vec(&header).unwrap();
        let mut out = (json.len() as u64).to_le_bytes().to_vec();
        out.extend(json);
        out.resize(out.len() + at as usize, 0);
        out
    }

    #[test]
    fn parses_dtypes_shapes_and_bytes() {
        let f = file(&[("a.weight", "BF16", &[4, 8]), ("b.qweight", "I32", &[2, 8]), ("c.weight", "F8_E4M3", &[16])]);
        let t = parse_header(&f, f.len() as u64).unwrap();
        assert_eq!(t.iter().map(|t| t.bytes).collect::<Vec<_>>(), [64, 64, 16]);
        assert_eq!(t[2].dtype.precision(), Some(Precision::Fp8));
    }

    #[test]
    fn bad_headers_are_refused_naming_the_field() {
        let good = file(&[("a.weight", "BF16", &[4, 8])]);
        let len = good.len() as u64;
        let cases: Vec<(Vec<u8>, u64, &str)> = vec![
            (good[..5].to_vec(), len, "invalid `header length`: 5 bytes"),
            (good.clone(), 20, "invalid `header length`"),
            (
                u64::MAX.to_le_bytes().to_vec(),
                u64::MAX,
                "invalid `header length`: 18446744073709551615 (at most 100000000 bytes)",
            ),
            (good[..12].to_vec(), len, "invalid `header`"),
            (file(&[("a.weight", "Q4", &[4])]), len, "unknown dtype for `a.weight.dtype` `Q4`"),
            (file(&[("a.weight", "BF16", &[1 << 40, 1 << 40])]), len, "invalid `a.weight.shape`"),
            (file(&[("a.weight", "BF16", &[u64::MAX, 2])]), len, "invalid `a.weight.shape`"),
        ];
        for (bytes, size, expected) in cases {
            let e = parse_header(&bytes, size).unwrap_err().to_string();
            assert!(e.starts_with(expected), "{expected}: {e}");
        }
    }

    /// `n` BF16 tensors of 4 × 8 named like a large MoE checkpoint's.
    fn many(n: usize) -> (Vec<u8>, u64) {
        crate::testing::safetensors_header((0..n).map(|i| {
            (format!("model.layers.{}.mlp.experts.{}.up_proj.weight", i / 1000, i % 1000), "BF16", vec![4, 8])
        }))
    }

    #[test]
    fn a_header_past_the_tensor_cap_is_refused_before_its_tensors_are_kept() {
        let (ok, size) = many(10_000);
        let t = parse_header(&ok, size).unwrap();
        assert_eq!(t.len(), 10_000);
        assert!(t.iter().all(|t| t.bytes == 64), "every tensor 4 × 8 BF16");
        let (big, size) = many(MAX_HEADER_TENSORS + 1);
        let e = match parse_header(&big, size) {
            Err(e) => e.to_string(),
            Ok(t) => panic!("{} tensors accepted", t.len()),
        };
        assert_eq!(e, "invalid `header`: more than 262144 tensors (at most 262144 tensors in one header)");
    }

    #[test]
    fn repeated_names_and_oversized_entries_are_refused() {
        let json = br#"{"a": {"dtype": "U8", "shape": [1], "data_offsets": [0, 1]}, "a": {"dtype": "U8", "shape": [1], "data_offsets": [1, 2]}}"#;
        let mut f = (json.len() as u64).to_le_bytes().to_vec();
        f.extend(json);
        f.extend([0, 0]);
        let e = parse_header(&f, f.len() as u64).unwrap_err().to_string();
        assert_eq!(e, "invalid `a`: named twice in the header (one entry per tensor)");
        let long =
            format!(r#"{{"a": {{"dtype": "U8", "shape": [1], "data_offsets": [0, 1], "x": "{}"}}}}"#, "y".repeat(5000));
        let mut f = (long.len() as u64).to_le_bytes().to_vec();
        f.extend(long.as_bytes());
        f.push(0);
        let e = parse_header(&f, f.len() as u64).unwrap_err().to_string();
        assert!(e.starts_with("invalid `a`: an entry of 50") && e.contains("bytes (at most 4096 bytes"), "{e}");
    }

    /// An index shaped as DeepSeek-V3's (91,991 tensors in 163 shards, names as published) fits
    /// the cap with room; one naming 80,000 shard files is refused, where the old pairwise
    /// dedupe took 18 s.
    #[test]
    fn index_shards_are_deduplicated_and_capped() {
        let mut names: Vec<String> =
            vec!["model.embed_tokens.weight".into(), "model.norm.weight".into(), "lm_head.weight".into()];
        let attn = ["q_a_proj", "q_b_proj", "kv_a_proj_with_mqa", "kv_b_proj", "o_proj"];
        for l in 0..62 {
            let p = format!("model.layers.{l}");
            for a in attn {
                names.push(format!("{p}.self_attn.{a}.weight"));
                names.push(format!("{p}.self_attn.{a}.weight_scale_inv"));
            }
            for n in
                ["self_attn.q_a_layernorm", "self_attn.kv_a_layernorm", "input_layernorm", "post_attention_layernorm"]
            {
                names.push(format!("{p}.{n}.weight"));
            }
            let mut mlp = |prefix: String| {
                for m in ["gate_proj", "up_proj", "down_proj"] {
                    names.push(format!("{prefix}.{m}.weight"));
                    names.push(format!("{prefix}.{m}.weight_scale_inv"));
                }
            };
            if l < 3 {
                mlp(format!("{p}.mlp"));
            } else {
                (0..256).for_each(|e| mlp(format!("{p}.mlp.experts.{e}")));
                mlp(format!("{p}.mlp.shared_experts"));
                names.push(format!("{p}.mlp.gate.weight"));
                names.push(format!("{p}.mlp.gate.e_score_correction_bias"));
            }
        }
        for n in ["embed_tokens", "enorm", "hnorm", "eh_proj", "shared_head.norm", "shared_head.head"] {
            names.push(format!("model.layers.61.{n}.weight"));
        }
        assert_eq!(names.len(), 91_991, "the published index's tensor count");
        let map: serde_json::Map<String, Value> = names
            .iter()
            .enumerate()
            .map(|(i, n)| {
                (n.clone(), Value::from(format!("model-{:05}-of-000163.safetensors", 1 + i * 163 / names.len())))
            })
            .collect();
        let text = serde_json::to_string_pretty(
            &serde_json::json!({"metadata": {"total_size": 688586727753u64}, "weight_map": map}),
        )
        .unwrap();
        assert!(text.len() < MAX_INDEX_BYTES / 3, "{} bytes", text.len());
        assert_eq!(index_shards(&text).unwrap().len(), 163);
        let many: serde_json::Map<String, Value> =
            (0..80_000).map(|i| (format!("t{i}"), Value::from(format!("s{i}.safetensors")))).collect();
        let e = index_shards(&serde_json::json!({"weight_map": many}).to_string()).unwrap_err().to_string();
        assert_eq!(e, "invalid `weight_map`: more than 4096 shard files (at most 4096)");
    }

    #[test]
    fn index_shards_refuse_paths() {
        let ok =
            r#"{"weight_map": {"a": "model-00001-of-00002.safetensors", "b": "model-00002-of-00002.safetensors"}}"#;
        assert_eq!(index_shards(ok).unwrap().len(), 2);
        let e = index_shards(r#"{"weight_map": {"a": "../x.safetensors"}}"#).unwrap_err().to_string();
        assert!(e.starts_with("invalid `weight_map.a`"), "{e}");
    }

    #[test]
    fn classes_by_name() {
        for (n, c) in [
            ("model.layers.0.self_attn.q_proj.weight", "attention"),
            ("model.layers.0.self_attn.q_proj.weight_scale_inv", "attention"),
            ("model.layers.0.mlp.gate_proj.qweight", "mlp"),
            ("model.layers.0.mlp.gate.weight", "router"),
            ("model.layers.0.mlp.experts.3.up_proj.weight", "experts"),
            ("model.layers.0.mlp.shared_expert.up_proj.weight", "shared"),
            ("model.layers.0.input_layernorm.weight", "norm"),
            ("model.layers.0.post_attention_layernorm.weight", "norm"),
            ("model.embed_tokens.weight", "embedding"),
            ("lm_head.weight", "lm_head"),
        ] {
            assert_eq!(class_of(n), c, "{n}");
        }
    }
}
