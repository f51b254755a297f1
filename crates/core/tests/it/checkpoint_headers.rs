//! The safetensors and GGUF header parsers take any bytes — random, truncated or with
//! bytes flipped — and answer a model, "read more" or an error; never a panic, never a number from
//! the file used as an allocation size.

use llm_ledger_core::model::gguf::{self, Parsed};
use llm_ledger_core::model::safetensors;
use proptest::prelude::*;

/// A valid safetensors file: two BF16 tensors and one F8 tensor with zero data.
fn safetensors_file() -> Vec<u8> {
    let json = br#"{"__metadata__": {"format": "pt"}, "a.weight": {"dtype": "BF16", "shape": [4, 8], "data_offsets": [0, 64]}, "b.weight": {"dtype": "F8_E4M3", "shape": [16], "data_offsets": [64, 80]}}"#;
    let mut out = (json.len() as u64).to_le_bytes().to_vec();
    out.extend(json);
    out.resize(out.len() + 80, 0);
    out
}

fn s(out: &mut Vec<u8>, x: &str) {
    out.extend((x.len() as u64).to_le_bytes());
    out.extend(x.as_bytes());
}

/// A valid GGUF v3 file: a two-layer llama (hidden 32, MLP 64, 2 heads) in F16 with zero data.
fn gguf_file() -> Vec<u8> {
    let mut tensors: Vec<(String, Vec<u64>)> = vec![("token_embd.weight".into(), vec![32, 10])];
    for l in 0..2 {
        for (n, d) in [("attn_q", [32, 32]), ("attn_k", [32, 32]), ("attn_v", [32, 32]), ("attn_output", [32, 32])] {
            tensors.push((format!("blk.{l}.{n}.weight"), d.to_vec()));
        }
        for (n, d) in [("ffn_gate", [32, 64]), ("ffn_up", [32, 64]), ("ffn_down", [64, 32])] {
            tensors.push((format!("blk.{l}.{n}.weight"), d.to_vec()));
        }
    }
    let kv: [(&str, u32); 5] = [
        ("llama.block_count", 2),
        ("llama.embedding_length", 32),
        ("llama.feed_forward_length", 64),
        ("llama.attention.head_count", 2),
        ("llama.vocab_size", 10),
    ];
    let mut out = b"GGUF".to_vec();
    out.extend(3u32.to_le_bytes());
    out.extend((tensors.len() as u64).to_le_bytes());
    out.extend((kv.len() as u64 + 2).to_le_bytes());
    s(&mut out, "general.architecture");
    out.extend(8u32.to_le_bytes());
    s(&mut out, "llama");
    for (k, v) in kv {
        s(&mut out, k);
        out.extend(4u32.to_le_bytes());
        out.extend(v.to_le_bytes());
    }
    s(&mut out, "tokenizer.ggml.scores");
    out.extend(9u32.to_le_bytes());
    out.extend(6u32.to_le_bytes());
    out.extend(10u64.to_le_bytes());
    out.extend([0u8; 40]);
    let mut offset = 0u64;
    for (name, dims) in &tensors {
        s(&mut out, name);
        out.extend((dims.len() as u32).to_le_bytes());
        dims.iter().for_each(|d| out.extend(d.to_le_bytes()));
        out.extend(1u32.to_le_bytes());
        out.extend(offset.to_le_bytes());
        offset += (dims.iter().product::<u64>() * 2).div_ceil(32) * 32;
    }
    let start = out.len().div_ceil(32) * 32;
    out.resize(start + offset as usize, 0);
    out
}

/// Feed `bytes` (as the whole file) to both parsers; GGUF is driven the way the CLI drives it,
/// reading more while it asks, up to the file's end.
fn both(bytes: &[u8]) {
    let size = bytes.len() as u64;
    let _ = safetensors::header_len(bytes, size);
    if let Err(e) = safetensors::parse_header(bytes, size) {
        assert!(!e.to_string().contains('\n'), "{e}");
    }
    let mut have = bytes.len().min(64);
    for _ in 0..64 {
        match gguf::parse(&bytes[..have], size) {
            Ok(Parsed::Done(g)) => {
                let _ = gguf::model(&g, "fuzz");
                return;
            }
            Ok(Parsed::NeedMore(n)) => {
                assert!(n > have as u64 && n <= size, "asks for {n} with {have} of {size}");
                have = (n as usize).max(2 * have).min(bytes.len());
            }
            Err(e) => {
                assert!(!e.to_string().contains('\n'), "{e}");
                return;
            }
        }
    }
    panic!("GGUF parsing did not finish");
}

#[test]
fn the_valid_files_parse() {
    let st = safetensors_file();
    let t = safetensors::parse_header(&st, st.len() as u64).unwrap();
    assert_eq!(t.iter().map(|t| t.bytes).sum::<u64>(), 80);
    let g = gguf_file();
    let Parsed::Done(parsed) = gguf::parse(&g, g.len() as u64).unwrap() else { panic!("whole file") };
    let spec = gguf::model(&parsed, "tiny").unwrap();
    assert_eq!(spec.num_layers(), 2);
    assert_eq!(spec.hidden_size, 32);
    // F16 everywhere: 2 bytes per parameter.
    assert_eq!(parsed.weight_bytes(), 2 * (320 + 2 * (4 * 1024 + 3 * 2048)));
}

#[test]
fn every_truncation_is_refused_or_asks_for_more() {
    for file in [safetensors_file(), gguf_file()] {
        for cut in 0..file.len() {
            both(&file[..cut]);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        both(&bytes);
        let mut with_magic = b"GGUF\x03\x00\x00\x00".to_vec();
        with_magic.extend(&bytes);
        both(&with_magic);
    }

    #[test]
    fn flipped_bytes_never_panic(at in 0usize..4096, value in any::<u8>(), which in 0usize..2) {
        // Errors stay on one line whatever byte lands in a name (a newline once did).
        let mut file = if which == 0 { safetensors_file() } else { gguf_file() };
        let i = at % file.len();
        file[i] = value;
        both(&file);
    }
}
