//! GGUF (llama.cpp) headers → a [`ModelSpec`] with each module class stored at its quant types'
//! exact width.
//!
//! Format (ggml `docs/gguf.md`), little-endian: magic `GGUF`, `u32` version (2 or 3), `u64`
//! tensor count, `u64` metadata count; each metadata entry a string key, a `u32` value type and
//! the value (strings are a `u64` length and UTF-8 bytes; arrays a `u32` item type, a `u64` count
//! and the items); then per tensor its name, `u32` number of dimensions (at most 4), the `u64`
//! dimensions (innermost first), the `u32` ggml type and a `u64` data offset. The tensors follow.
//!
//! [`parse`] takes a prefix of the file and answers [`Parsed::NeedMore`] when the header runs past
//! it, so the caller reads only the header; every count and length is checked against the file
//! size before it is used, and nothing is allocated by a number read from the file (arrays such as
//! the tokenizer's vocabulary are walked, not stored).
//!
//! Bytes per tensor: `elements ÷ block_elements × block_bytes` from [`GGML_TYPES`].

use super::hf::HfConfig;
use super::quant::WeightPrecisions;
use super::spec::ModelSpec;
use crate::error::{Error, Result};
use crate::precision::Precision;
use serde_json::{json, Map, Value};

/// Most tensors or metadata entries a header may declare.
const MAX_ENTRIES: u64 = 1 << 20;
/// Longest metadata key (the GGUF specification: a key is at most 65,535 bytes).
const MAX_KEY_BYTES: u64 = 65_535;
/// Longest tensor name: the specification's 64 bytes (`GGML_MAX_NAME`), with room for tools that
/// write longer ones.
const MAX_TENSOR_NAME_BYTES: u64 = 256;
/// Bytes of a string value kept.
const MAX_KEPT_STRING_BYTES: usize = 4096;
/// Most dimensions of a tensor (`GGML_MAX_DIMS`).
const MAX_DIMS: u32 = 4;
/// Largest element count of one tensor, 2⁴⁸.
const MAX_TENSOR_ELEMENTS: u64 = 1 << 48;
/// Deepest nesting of metadata arrays.
const MAX_ARRAY_DEPTH: u32 = 4;

/// A ggml tensor type: id, name, elements per block, bytes per block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GgmlType {
    /// `enum ggml_type` value.
    pub id: u32,
    /// Name as llama.cpp prints it.
    pub name: &'static str,
    /// Elements per block.
    pub block_elements: u64,
    /// Bytes per block, scales and minimums included.
    pub block_bytes: u64,
}

impl GgmlType {
    /// Bits per element, `8 × block_bytes ÷ block_elements` (Q4_K: 8 × 144 ÷ 256 = 4.5).
    pub fn bits(&self) -> f64 {
        8.0 * self.block_bytes as f64 / self.block_elements as f64
    }
}

const fn t(id: u32, name: &'static str, block_elements: u64, block_bytes: u64) -> GgmlType {
    GgmlType { id, name, block_elements, block_bytes }
}

/// Every ggml type a GGUF tensor may have, with its block layout. Source: ggml
/// `src/ggml-common.h` (the `block_*` structs; `ggml_half` is 2 bytes, `QK_K` = 256) and the
/// `type_traits` table of `src/ggml.c`; ids from `enum ggml_type` in `include/ggml.h`.
pub const GGML_TYPES: &[GgmlType] = &[
    t(0, "F32", 1, 4),
    t(1, "F16", 1, 2),
    t(2, "Q4_0", 32, 18),      // half d; u8 qs[16]
    t(3, "Q4_1", 32, 20),      // half d, m; u8 qs[16]
    t(6, "Q5_0", 32, 22),      // half d; u8 qh[4]; u8 qs[16]
    t(7, "Q5_1", 32, 24),      // half d, m; u8 qh[4]; u8 qs[16]
    t(8, "Q8_0", 32, 34),      // half d; i8 qs[32]
    t(9, "Q8_1", 32, 36),      // half d, s; i8 qs[32]
    t(10, "Q2_K", 256, 84),    // u8 scales[16]; u8 qs[64]; half d, dmin
    t(11, "Q3_K", 256, 110),   // u8 hmask[32]; u8 qs[64]; u8 scales[12]; half d
    t(12, "Q4_K", 256, 144),   // half d, dmin; u8 scales[12]; u8 qs[128]
    t(13, "Q5_K", 256, 176),   // half d, dmin; u8 scales[12]; u8 qh[32]; u8 qs[128]
    t(14, "Q6_K", 256, 210),   // u8 ql[128]; u8 qh[64]; i8 scales[16]; half d
    t(15, "Q8_K", 256, 292),   // float d; i8 qs[256]; i16 bsums[16]
    t(16, "IQ2_XXS", 256, 66), // half d; u16 qs[32]
    t(17, "IQ2_XS", 256, 74),  // half d; u16 qs[32]; u8 scales[8]
    t(18, "IQ3_XXS", 256, 98), // half d; u8 qs[96]
    t(19, "IQ1_S", 256, 50),   // half d; u8 qs[32]; u16 qh[8]
    t(20, "IQ4_NL", 32, 18),   // half d; u8 qs[16]
    t(21, "IQ3_S", 256, 110),  // half d; u8 qs[64]; u8 qh[8]; u8 signs[32]; u8 scales[4]
    t(22, "IQ2_S", 256, 82),   // half d; u8 qs[64]; u8 qh[8]; u8 scales[8]
    t(23, "IQ4_XS", 256, 136), // half d; u16 scales_h; u8 scales_l[4]; u8 qs[128]
    t(24, "I8", 1, 1),
    t(25, "I16", 1, 2),
    t(26, "I32", 1, 4),
    t(27, "I64", 1, 8),
    t(28, "F64", 1, 8),
    t(29, "IQ1_M", 256, 56), // u8 qs[32]; u8 qh[16]; u8 scales[8]
    t(30, "BF16", 1, 2),
    t(34, "TQ1_0", 256, 54), // u8 qs[48]; u8 qh[4]; half d
    t(35, "TQ2_0", 256, 66), // u8 qs[64]; half d
    t(39, "MXFP4", 32, 17),  // u8 e (E8M0); u8 qs[16]
];

/// The type with ggml id `id`.
pub fn ggml_type(id: u32) -> Option<GgmlType> {
    GGML_TYPES.iter().find(|t| t.id == id).copied()
}

/// One tensor of a GGUF header.
#[derive(Debug, Clone, PartialEq)]
pub struct GgufTensor {
    /// Name (`blk.0.attn_q.weight`).
    pub name: String,
    /// Dimensions, innermost first.
    pub dims: Vec<u64>,
    /// Its ggml type.
    pub ggml: GgmlType,
    /// Product of the dimensions.
    pub elements: u64,
    /// Stored bytes.
    pub bytes: u64,
}

/// A metadata value kept from the header (arrays keep only their length).
#[derive(Debug, Clone, PartialEq)]
pub enum MetaValue {
    /// Any integer type (bool as 0/1).
    Int(i128),
    /// FLOAT32 or FLOAT64.
    Float(f64),
    /// A string.
    Str(String),
    /// An array: its item count.
    Array(u64),
}

/// A parsed GGUF header.
#[derive(Debug, Clone, PartialEq)]
pub struct Gguf {
    /// Format version (2 or 3).
    pub version: u32,
    /// Metadata, in file order.
    pub metadata: Vec<(String, MetaValue)>,
    /// Tensor infos, in file order.
    pub tensors: Vec<GgufTensor>,
}

/// What [`parse`] made of a prefix.
#[derive(Debug, Clone, PartialEq)]
pub enum Parsed {
    /// The whole header.
    Done(Gguf),
    /// The header continues past the prefix: read at least this many bytes of the file.
    NeedMore(u64),
}

/// A cursor over a prefix of a file of `file_bytes` bytes.
struct Cursor<'a> {
    buf: &'a [u8],
    at: u64,
    file_bytes: u64,
}

/// Why a read stopped: the prefix ended (read more), or the file is malformed.
enum Stop {
    More(u64),
    Bad(Error),
}

impl From<Error> for Stop {
    fn from(e: Error) -> Self {
        Stop::Bad(e)
    }
}

type R<T> = std::result::Result<T, Stop>;

impl Cursor<'_> {
    fn take(&mut self, n: u64, field: &str) -> R<&[u8]> {
        let end =
            self.at.checked_add(n).ok_or_else(|| Stop::Bad(Error::invalid(field, n, "a length within the file")))?;
        if end > self.file_bytes {
            return Err(Stop::Bad(Error::invalid(
                field,
                format!("{n} bytes at offset {}", self.at),
                format!("within the file's {} bytes (truncated header)", self.file_bytes),
            )));
        }
        if end > self.buf.len() as u64 {
            return Err(Stop::More(end));
        }
        let s = &self.buf[self.at as usize..end as usize];
        self.at = end;
        Ok(s)
    }

    fn u32(&mut self, field: &str) -> R<u32> {
        Ok(u32::from_le_bytes(self.take(4, field)?.try_into().expect("4 bytes")))
    }

    fn u64(&mut self, field: &str) -> R<u64> {
        Ok(u64::from_le_bytes(self.take(8, field)?.try_into().expect("8 bytes")))
    }

    /// A string of at most `most` bytes (a longer one is refused before it is read).
    fn string(&mut self, field: &str, most: u64) -> R<String> {
        let n = self.u64(field)?;
        if n > most {
            return Err(Stop::Bad(Error::invalid(field, format!("{n} bytes"), format!("at most {most} bytes"))));
        }
        let bytes = self.take(n, field)?;
        Ok(printable(&String::from_utf8_lossy(bytes)))
    }

    /// A string value, its first [`MAX_KEPT_STRING_BYTES`] bytes kept (the ledger reads names and
    /// architectures; a tokenizer's template or a hostile length is skipped, not held).
    fn string_value(&mut self, field: &str) -> R<String> {
        let n = self.u64(field)?;
        let bytes = self.take(n, field)?;
        let kept = &bytes[..bytes.len().min(MAX_KEPT_STRING_BYTES)];
        Ok(printable(&String::from_utf8_lossy(kept)))
    }

    /// Skip a string without keeping it.
    fn skip_string(&mut self, field: &str) -> R<()> {
        let n = self.u64(field)?;
        self.take(n, field).map(|_| ())
    }

    /// A metadata value of type `ty`.
    fn value(&mut self, ty: u32, key: &str, depth: u32) -> R<MetaValue> {
        let int = |b: &[u8], signed: bool| -> i128 {
            let mut a = [0u8; 8];
            a[..b.len()].copy_from_slice(b);
            let u = u64::from_le_bytes(a);
            if signed {
                let shift = 64 - 8 * b.len() as u32;
                (((u << shift) as i64) >> shift) as i128
            } else {
                u as i128
            }
        };
        Ok(match ty {
            0 | 7 => MetaValue::Int(int(self.take(1, key)?, false)),
            1 => MetaValue::Int(int(self.take(1, key)?, true)),
            2 => MetaValue::Int(int(self.take(2, key)?, false)),
            3 => MetaValue::Int(int(self.take(2, key)?, true)),
            4 => MetaValue::Int(int(self.take(4, key)?, false)),
            5 => MetaValue::Int(int(self.take(4, key)?, true)),
            10 => MetaValue::Int(int(self.take(8, key)?, false)),
            11 => MetaValue::Int(int(self.take(8, key)?, true)),
            6 => MetaValue::Float(f64::from(f32::from_le_bytes(self.take(4, key)?.try_into().expect("4 bytes")))),
            12 => MetaValue::Float(f64::from_le_bytes(self.take(8, key)?.try_into().expect("8 bytes"))),
            8 => MetaValue::Str(self.string_value(key)?),
            9 => {
                if depth >= MAX_ARRAY_DEPTH {
                    return Err(Stop::Bad(Error::invalid(
                        key,
                        "arrays nested deeper",
                        format!("at most {MAX_ARRAY_DEPTH} levels"),
                    )));
                }
                let item = self.u32(key)?;
                let n = self.u64(key)?;
                // Every item takes at least one byte: a count past the file's size is a lie.
                if n > self.file_bytes {
                    return Err(Stop::Bad(Error::invalid(
                        key,
                        format!("{n} items"),
                        "at most one item per byte of the file",
                    )));
                }
                match item {
                    8 => (0..n).try_for_each(|_| self.skip_string(key))?,
                    9 => (0..n).try_for_each(|_| self.value(9, key, depth + 1).map(|_| ()))?,
                    _ => {
                        let size = scalar_size(item).ok_or_else(|| Stop::Bad(unknown_type(key, item)))?;
                        self.take(n.saturating_mul(size), key)?;
                    }
                }
                MetaValue::Array(n)
            }
            other => return Err(Stop::Bad(unknown_type(key, other))),
        })
    }
}

/// `s` with control characters escaped (`\n`, `\u{0}`), so a name echoed in an error stays on
/// one line.
pub fn printable(s: &str) -> String {
    if !s.chars().any(char::is_control) {
        return s.to_string();
    }
    s.chars().map(|c| if c.is_control() { c.escape_default().to_string() } else { c.to_string() }).collect()
}

fn scalar_size(ty: u32) -> Option<u64> {
    match ty {
        0 | 1 | 7 => Some(1),
        2 | 3 => Some(2),
        4..=6 => Some(4),
        10..=12 => Some(8),
        _ => None,
    }
}

fn unknown_type(key: &str, ty: u32) -> Error {
    Error::invalid(format!("{key} value type"), ty, "a GGUF value type from 0 to 12")
}

/// Parse the header from `prefix`, the first bytes of a file of `file_bytes` bytes.
pub fn parse(prefix: &[u8], file_bytes: u64) -> Result<Parsed> {
    let mut c = Cursor { buf: prefix, at: 0, file_bytes };
    match header(&mut c) {
        Ok(g) => Ok(Parsed::Done(g)),
        Err(Stop::More(n)) => Ok(Parsed::NeedMore(n)),
        Err(Stop::Bad(e)) => Err(e),
    }
}

fn header(c: &mut Cursor) -> R<Gguf> {
    let magic = c.take(4, "magic")?;
    if magic != b"GGUF" {
        return Err(Stop::Bad(Error::invalid("magic", format!("{magic:?}"), "the bytes `GGUF`")));
    }
    let version = c.u32("version")?;
    if !(2..=3).contains(&version) {
        return Err(Stop::Bad(Error::invalid("version", version, "2 or 3")));
    }
    let n_tensors = c.u64("tensor_count")?;
    let n_kv = c.u64("metadata_kv_count")?;
    for (field, n) in [("tensor_count", n_tensors), ("metadata_kv_count", n_kv)] {
        if n > MAX_ENTRIES {
            return Err(Stop::Bad(Error::invalid(field, n, format!("at most {MAX_ENTRIES}"))));
        }
    }
    let mut metadata = Vec::new();
    for _ in 0..n_kv {
        let key = c.string("metadata key", MAX_KEY_BYTES)?;
        let ty = c.u32(&key)?;
        let v = c.value(ty, &key, 0)?;
        metadata.push((key, v));
    }
    let mut tensors = Vec::new();
    let mut offsets = Vec::new();
    for _ in 0..n_tensors {
        let name = c.string("tensor name", MAX_TENSOR_NAME_BYTES)?;
        let n_dims = c.u32(&format!("{name}.n_dims"))?;
        if n_dims > MAX_DIMS {
            return Err(Stop::Bad(Error::invalid(format!("{name}.n_dims"), n_dims, format!("at most {MAX_DIMS}"))));
        }
        let mut dims = Vec::with_capacity(n_dims as usize);
        for _ in 0..n_dims {
            dims.push(c.u64(&format!("{name}.dims"))?);
        }
        let ty = c.u32(&format!("{name}.type"))?;
        let offset = c.u64(&format!("{name}.offset"))?;
        let ggml = ggml_type(ty).ok_or_else(|| {
            Stop::Bad(Error::unknown_for(
                format!("{name}.type"),
                "ggml type",
                ty.to_string(),
                GGML_TYPES.iter().map(|t| format!("{} ({})", t.id, t.name)),
            ))
        })?;
        let elements = dims
            .iter()
            .try_fold(1u64, |a, d| a.checked_mul(*d).filter(|e| *e <= MAX_TENSOR_ELEMENTS))
            .ok_or_else(|| {
                Stop::Bad(Error::invalid(
                    format!("{name}.dims"),
                    format!("{dims:?}"),
                    format!("at most {MAX_TENSOR_ELEMENTS} elements"),
                ))
            })?;
        let row = dims.first().copied().unwrap_or(1);
        if row % ggml.block_elements != 0 {
            return Err(Stop::Bad(Error::invalid(
                format!("{name}.dims"),
                format!("{dims:?}"),
                format!("a first dimension divisible by {}'s block of {}", ggml.name, ggml.block_elements),
            )));
        }
        let bytes = elements / ggml.block_elements * ggml.block_bytes;
        offsets.push(offset);
        tensors.push(GgufTensor { name, dims, ggml, elements, bytes });
    }
    // The data start at the header's end rounded up to `general.alignment` (default 32); every
    // tensor must lie inside the file.
    let alignment = match metadata.iter().find(|(k, _)| k == "general.alignment") {
        None => 32,
        Some((_, MetaValue::Int(a))) if *a > 0 && *a <= 1 << 20 && (*a as u64).is_power_of_two() => *a as u64,
        Some((_, v)) => {
            return Err(Stop::Bad(Error::invalid("general.alignment", format!("{v:?}"), "a power of two up to 2^20")))
        }
    };
    let data_start = c.at.div_ceil(alignment).saturating_mul(alignment);
    for (t, off) in tensors.iter().zip(&offsets) {
        let end = data_start.checked_add(*off).and_then(|s| s.checked_add(t.bytes));
        if end.is_none_or(|e| e > c.file_bytes) {
            return Err(Stop::Bad(Error::invalid(
                format!("{}.offset", t.name),
                off,
                format!("data of {} bytes inside the file's {} bytes (truncated file?)", t.bytes, c.file_bytes),
            )));
        }
    }
    // No two tensors share bytes: sorted by offset, each (non-empty) span starts at or after the
    // end of every span before it. Then the bytes sum to at most the file's size.
    let mut spans: Vec<(u64, u64, usize)> = (tensors.iter().zip(&offsets).enumerate())
        .filter(|(_, (t, _))| t.bytes > 0)
        .map(|(i, (t, off))| (*off, off + t.bytes, i))
        .collect();
    spans.sort_unstable();
    let mut reach: Option<(u64, usize)> = None;
    for &(start, end, i) in &spans {
        if let Some((prev_end, j)) = reach.filter(|(prev_end, _)| *prev_end > start) {
            let (a, b) = (&tensors[i], &tensors[j]);
            return Err(Stop::Bad(Error::invalid(
                format!("{}.offset", a.name),
                start,
                format!(
                    "data not overlapping {} (which ends at offset {prev_end}; tensors must not share bytes)",
                    b.name
                ),
            )));
        }
        if reach.is_none_or(|(prev_end, _)| end > prev_end) {
            reach = Some((end, i));
        }
    }
    Ok(Gguf { version, metadata, tensors })
}

impl Gguf {
    /// A metadata value by key.
    pub fn get(&self, key: &str) -> Option<&MetaValue> {
        self.metadata.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    /// An integer metadata value by key.
    fn int(&self, key: &str) -> Result<Option<u64>> {
        match self.get(key) {
            None => Ok(None),
            Some(MetaValue::Int(i)) if *i >= 0 && *i <= u64::MAX as i128 => Ok(Some(*i as u64)),
            Some(MetaValue::Float(f)) if f.fract() == 0.0 && *f >= 0.0 && *f < 9.0e15 => Ok(Some(*f as u64)),
            Some(v) => Err(Error::invalid(key, format!("{v:?}"), "a non-negative integer")),
        }
    }

    /// The tensor named `name`.
    pub fn tensor(&self, name: &str) -> Option<&GgufTensor> {
        self.tensors.iter().find(|t| t.name == name)
    }

    /// Every tensor's bytes. [`parse`] refuses tensors that share bytes or lie past the file's
    /// end, so the sum is at most the file's size (saturating all the same).
    pub fn weight_bytes(&self) -> u64 {
        self.tensors.iter().fold(0u64, |a, t| a.saturating_add(t.bytes))
    }

    /// The `config.json` this header describes (`general.architecture` llama, mistral, qwen2,
    /// qwen3; llama with experts is mixtral), for [`HfConfig`].
    pub fn config(&self) -> Result<Value> {
        let arch = match self.get("general.architecture") {
            Some(MetaValue::Str(s)) => s.clone(),
            Some(v) => return Err(Error::invalid("general.architecture", format!("{v:?}"), "a string")),
            None => {
                return Err(Error::MissingField {
                    field: "general.architecture".into(),
                    context: "a GGUF header".into(),
                })
            }
        };
        let supported = ["llama", "mistral", "qwen2", "qwen3"];
        if !supported.contains(&arch.as_str()) {
            return Err(Error::unknown_for("general.architecture", "GGUF architecture", arch, supported));
        }
        let key = |k: &str| format!("{arch}.{k}");
        let need = |k: &str| -> Result<u64> {
            self.int(&key(k))?.ok_or_else(|| Error::MissingField {
                field: key(k),
                context: format!("a GGUF header of architecture {arch}"),
            })
        };
        let vocab = match (
            self.int(&key("vocab_size"))?,
            self.get("tokenizer.ggml.tokens"),
            self.tensor("token_embd.weight"),
        ) {
            (Some(v), _, _) => v,
            (None, Some(MetaValue::Array(n)), _) => *n,
            (None, _, Some(t)) if t.dims.len() == 2 => t.dims[1],
            _ => {
                return Err(Error::MissingField {
                    field: key("vocab_size"),
                    context: "a GGUF header (nor tokenizer.ggml.tokens, nor token_embd.weight)".into(),
                })
            }
        };
        let experts = self.int(&key("expert_count"))?.unwrap_or(0);
        let model_type = if arch == "llama" && experts > 0 { "mixtral".to_string() } else { arch.clone() };
        let mut cfg = Map::new();
        cfg.insert("model_type".into(), json!(model_type));
        cfg.insert("hidden_size".into(), json!(need("embedding_length")?));
        cfg.insert("num_hidden_layers".into(), json!(need("block_count")?));
        cfg.insert("num_attention_heads".into(), json!(need("attention.head_count")?));
        cfg.insert("intermediate_size".into(), json!(need("feed_forward_length")?));
        cfg.insert("vocab_size".into(), json!(vocab));
        cfg.insert("tie_word_embeddings".into(), json!(self.tensor("output.weight").is_none()));
        for (gguf, hf) in [
            ("attention.head_count_kv", "num_key_value_heads"),
            ("context_length", "max_position_embeddings"),
            ("attention.key_length", "head_dim"),
            ("expert_used_count", "num_experts_per_tok"),
        ] {
            if let Some(v) = self.int(&key(gguf))? {
                cfg.insert(hf.into(), json!(v));
            }
        }
        if experts > 0 {
            cfg.insert("num_local_experts".into(), json!(experts));
        }
        if let Some(MetaValue::Float(f)) = self.get(&key("rope.freq_base")) {
            cfg.insert("rope_theta".into(), json!(f));
        }
        Ok(Value::Object(cfg))
    }
}

/// The module class of a GGUF tensor by its llama.cpp name (the classes of
/// [`WeightPrecisions`], plus `norm` and `other`).
pub fn class_of(name: &str) -> &'static str {
    let has = |s: &str| name.contains(s);
    if has("norm") {
        "norm"
    } else if name.starts_with("token_embd") || name.starts_with("position_embd") {
        "embedding"
    } else if name.starts_with("output.") {
        "lm_head"
    } else if has("_shexp") {
        "shared"
    } else if has("_exps") {
        "experts"
    } else if has("ffn_gate_inp") {
        "router"
    } else if has(".attn_") {
        "attention"
    } else if has(".ffn_") {
        "mlp"
    } else {
        "other"
    }
}

/// The model a GGUF header describes, named `name`, with each weight class stored at the exact
/// width of its tensors: one quant type's width (`Q4_K` → 4.5 bits), or for a class that mixes
/// types (Q4_K_M keeps some `attn_v` and `ffn_down` in Q6_K) the byte-weighted mean,
/// `8 × Σ bytes ÷ Σ elements` over the class's matrices.
pub fn model(g: &Gguf, name: &str) -> Result<ModelSpec> {
    let mut spec = super::hf::resolve(&HfConfig::from_value(g.config()?)?, name)?;
    let classes = ["attention", "mlp", "experts", "shared", "router", "embedding", "lm_head"];
    let mut prec = [Precision::Bf16; 7];
    for (i, class) in classes.iter().enumerate() {
        let matrices = || g.tensors.iter().filter(|t| class_of(&t.name) == *class && t.dims.len() >= 2);
        // At most 2²⁰ tensors of at most 2⁴⁸ elements: the sums fit a u128.
        let (bytes, elements) =
            matrices().fold((0u128, 0u128), |(b, e), t| (b + u128::from(t.bytes), e + u128::from(t.elements)));
        let first = matrices().next().map(|t| t.ggml.name);
        let one_type = matrices().all(|t| Some(t.ggml.name) == first);
        if elements > 0 {
            prec[i] = match (one_type, first) {
                (true, Some("F32")) => Precision::Fp32,
                (true, Some("F16")) => Precision::Fp16,
                (true, Some("BF16")) => Precision::Bf16,
                _ => Precision::from_bits(8.0 * bytes as f64 / elements as f64).ok_or_else(|| {
                    Error::invalid(
                        format!("{class} tensors"),
                        format!("{bytes} bytes for {elements} weights"),
                        "at most 32 bits per weight",
                    )
                })?,
            };
        }
    }
    let [attention, mlp, experts, shared_experts, router, embedding, mut lm_head] = prec;
    if spec.tied_embeddings {
        lm_head = embedding;
    }
    spec.checkpoint_quant = Some(super::quant::CheckpointQuant::Known {
        method: "gguf".into(),
        weights: WeightPrecisions { attention, mlp, experts, shared_experts, router, embedding, lm_head },
        gemm_activations: None,
    });
    Ok(spec)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A GGUF v3 header: `kv` u32 metadata (plus `general.architecture` llama) and `tensors`
    /// (name, dims, ggml type, offset).
    fn header(kv: &[(&str, u32)], tensors: &[(String, Vec<u64>, u32, u64)]) -> Vec<u8> {
        let s = |out: &mut Vec<u8>, x: &str| {
            out.extend((x.len() as u64).to_le_bytes());
            out.extend(x.as_bytes());
        };
        let mut out = b"GGUF".to_vec();
        out.extend(3u32.to_le_bytes());
        out.extend((tensors.len() as u64).to_le_bytes());
        out.extend((kv.len() as u64 + 1).to_le_bytes());
        s(&mut out, "general.architecture");
        out.extend(8u32.to_le_bytes());
        s(&mut out, "llama");
        for (k, v) in kv {
            s(&mut out, k);
            out.extend(4u32.to_le_bytes());
            out.extend(v.to_le_bytes());
        }
        for (name, dims, ty, offset) in tensors {
            s(&mut out, name);
            out.extend((dims.len() as u32).to_le_bytes());
            dims.iter().for_each(|d| out.extend(d.to_le_bytes()));
            out.extend(ty.to_le_bytes());
            out.extend(offset.to_le_bytes());
        }
        out
    }

    const LLAMA: [(&str, u32); 5] = [
        ("llama.block_count", 1),
        ("llama.embedding_length", 256),
        ("llama.feed_forward_length", 512),
        ("llama.attention.head_count", 2),
        ("llama.vocab_size", 100),
    ];

    /// A key or a tensor name longer than the specification allows is refused by its declared
    /// length, before its bytes are asked for; a long string value is kept cut.
    #[test]
    fn long_keys_names_and_values_are_refused_or_cut_by_their_declared_length() {
        let long_key = "k".repeat(70_000);
        let h = header(&[(long_key.as_str(), 1)], &[]);
        // The header's first bytes suffice: the length is refused, not read.
        let e = parse(&h[..100], 1 << 40).unwrap_err().to_string();
        assert!(e.contains("invalid `metadata key`: 70000 bytes (at most 65535 bytes)"), "{e}");
        let name = "t".repeat(300);
        let h = header(&LLAMA, &[(name, vec![256, 1], 0, 0)]);
        let e = parse(&h, 1 << 20).unwrap_err().to_string();
        assert!(e.contains("invalid `tensor name`: 300 bytes (at most 256 bytes)"), "{e}");
        let mut c = Cursor { buf: &[], at: 0, file_bytes: 0 };
        let mut value = (10_000u64).to_le_bytes().to_vec();
        value.extend(vec![b'x'; 10_000]);
        c.buf = &value;
        c.file_bytes = value.len() as u64;
        let Ok(kept) = c.string_value("v") else { panic!("a string value") };
        assert_eq!(kept.len(), MAX_KEPT_STRING_BYTES);
    }

    /// 51 F32 tensors of 256 × 1 at offset 0 of a 68 KB file claimed 51 × 1 KiB of weights; they
    /// share their bytes and are refused.
    #[test]
    fn tensors_that_share_bytes_are_refused() {
        let tensors: Vec<_> = (0..51).map(|i| (format!("blk.0.ffn_up.{i}.weight"), vec![256, 1], 0u32, 0u64)).collect();
        let h = header(&LLAMA, &tensors);
        let e = parse(&h, 68_000).unwrap_err().to_string();
        assert!(
            e.starts_with("invalid `blk.0.ffn_up.1.weight.offset`: 0 (data not overlapping blk.0.ffn_up.0.weight"),
            "{e}"
        );
        // Laid end to end they are accepted, and their bytes are exact.
        let tensors: Vec<_> =
            (0..51).map(|i| (format!("blk.0.ffn_up.{i}.weight"), vec![256, 1], 0u32, 1024 * i as u64)).collect();
        let h = header(&LLAMA, &tensors);
        let Parsed::Done(g) = parse(&h, 68_000).unwrap() else { panic!("the whole header") };
        assert_eq!(g.weight_bytes(), 51 * 1024);
        // A tensor starting inside another one's span is refused too.
        let mut tensors = tensors;
        tensors[7].3 = 6 * 1024 + 512;
        assert!(parse(&header(&LLAMA, &tensors), 68_000).unwrap_err().to_string().contains("data not overlapping"));
    }

    /// 2¹⁶ MLP tensors of 2⁴⁸ IQ1_S elements laid end to end (a 3.6 EB file, as far as the header
    /// says) hold 2⁶⁴ elements, which wraps a u64 sum; the class's width is still exact
    /// (1.5625 bits), not the bf16 a wrapped sum fell back to.
    #[test]
    fn class_sums_do_not_wrap() {
        let elements = MAX_TENSOR_ELEMENTS;
        let bytes = elements / 256 * 50;
        let n = 1usize << 16;
        let tensors: Vec<_> = (0..n)
            .map(|i| (format!("blk.0.ffn_up.{i}.weight"), vec![256, elements / 256], 19u32, bytes * i as u64))
            .collect();
        assert!(elements.checked_mul(n as u64).is_none(), "the elements overflow a u64");
        let file_bytes = bytes * n as u64 + (64 << 20);
        let h = header(&LLAMA, &tensors);
        let Parsed::Done(g) = parse(&h, file_bytes).unwrap() else { panic!("the whole header") };
        let spec = model(&g, "sparse").unwrap();
        let Some(crate::model::quant::CheckpointQuant::Known { weights, .. }) = spec.checkpoint_quant else {
            panic!("gguf storage")
        };
        assert_eq!(weights.mlp, Precision::from_bits(1.5625).unwrap());
    }

    #[test]
    fn block_layouts_give_the_published_widths() {
        let bits = |n: &str| GGML_TYPES.iter().find(|t| t.name == n).unwrap().bits();
        assert_eq!(bits("Q4_K"), 4.5);
        assert_eq!(bits("Q5_K"), 5.5);
        assert_eq!(bits("Q6_K"), 6.5625);
        assert_eq!(bits("Q8_0"), 8.5);
        assert_eq!(bits("Q4_0"), 4.5);
        assert_eq!(bits("Q2_K"), 2.625);
        assert_eq!(bits("IQ4_XS"), 4.25);
    }
}
