//! The e5 model-file reader, tokenizer and encoder on a tiny synthetic model
//! written by the test itself: runs without the real weights, and checks that
//! no truncation or byte corruption makes parsing or loading panic.
#![cfg(feature = "neural")]

use mnemon::embed::e5::format::{self, TensorType};
use mnemon::embed::e5::tokenizer::E5Tokenizer;
use mnemon::embed::e5::E5Embedder;
use mnemon::embed::{EmbedKind, Embedder};
use mnemon::Error;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

const HIDDEN: usize = 32;
const FFN: usize = 64;
const POSITIONS: usize = 16;

const PIECES: [(&str, f32); 13] = [
    ("<s>", 0.0),
    ("<pad>", 0.0),
    ("</s>", 0.0),
    ("<unk>", 0.0),
    ("▁", -2.0),
    ("a", -3.0),
    ("b", -3.0),
    ("▁ab", -2.5),
    ("ab", -4.0),
    ("▁a", -3.5),
    ("c", -5.0),
    ("<mask>", 0.0),
    ("咖啡", -6.0),
];

/// Writes a valid model file: 1 layer, hidden 32, 2 heads, FFN 64, 16
/// positions; weights are small deterministic values.
fn synthetic_model() -> Vec<u8> {
    let rows = PIECES.len() + 3;
    let mut b = Vec::new();
    b.extend_from_slice(b"E5S1");
    b.extend_from_slice(&1u32.to_le_bytes());
    for v in [HIDDEN, 1, 2, FFN, rows, POSITIONS, 2] {
        b.extend_from_slice(&(v as i32).to_le_bytes());
    }
    b.extend_from_slice(&1e-12f32.to_le_bytes());
    b.extend_from_slice(&32i32.to_le_bytes());
    // Vocabulary.
    b.extend_from_slice(&(PIECES.len() as i32).to_le_bytes());
    for id in [0i32, 2, 1, 3] {
        b.extend_from_slice(&id.to_le_bytes());
    }
    let text: Vec<u8> = PIECES.iter().flat_map(|(p, _)| p.bytes()).collect();
    b.extend_from_slice(&(text.len() as u64).to_le_bytes());
    let mut off = 0u32;
    b.extend_from_slice(&off.to_le_bytes());
    for (p, _) in PIECES {
        off += p.len() as u32;
        b.extend_from_slice(&off.to_le_bytes());
    }
    for (_, s) in PIECES {
        b.extend_from_slice(&s.to_le_bytes());
    }
    b.extend_from_slice(&text);
    // Normaliser: tab → space, U+0001 removed, 'Ａ' → 'a' (for the test).
    let entries: [(u32, &[u32]); 3] = [(0x01, &[]), (0x09, &[0x20]), (0xff21, &[0x61])];
    let mut nm = Vec::new();
    for (cp, outs) in entries {
        nm.extend_from_slice(&cp.to_le_bytes());
        nm.push(outs.len() as u8);
        outs.iter().for_each(|o| nm.extend_from_slice(&o.to_le_bytes()));
    }
    b.extend_from_slice(&(entries.len() as i32).to_le_bytes());
    b.extend_from_slice(&(nm.len() as u32).to_le_bytes());
    b.extend_from_slice(&nm);
    // Tensors.
    let mut tensors: Vec<(String, TensorType, usize)> = vec![
        ("emb.word".into(), TensorType::Q4_0, rows * HIDDEN),
        ("emb.pos".into(), TensorType::F32, POSITIONS * HIDDEN),
        ("emb.type".into(), TensorType::F32, 2 * HIDDEN),
        ("emb.ln.w".into(), TensorType::F32, HIDDEN),
        ("emb.ln.b".into(), TensorType::F32, HIDDEN),
    ];
    for (s, ty, n) in [
        ("q.w", TensorType::Q4_0, HIDDEN * HIDDEN),
        ("q.b", TensorType::F32, HIDDEN),
        ("k.w", TensorType::Q4_0, HIDDEN * HIDDEN),
        ("k.b", TensorType::F32, HIDDEN),
        ("v.w", TensorType::Q4_0, HIDDEN * HIDDEN),
        ("v.b", TensorType::F32, HIDDEN),
        ("ao.w", TensorType::Q4_0, HIDDEN * HIDDEN),
        ("ao.b", TensorType::F32, HIDDEN),
        ("aln.w", TensorType::F32, HIDDEN),
        ("aln.b", TensorType::F32, HIDDEN),
        ("fi.w", TensorType::Q4_0, FFN * HIDDEN),
        ("fi.b", TensorType::F32, FFN),
        ("fo.w", TensorType::Q4_0, HIDDEN * FFN),
        ("fo.b", TensorType::F32, HIDDEN),
        ("oln.w", TensorType::F32, HIDDEN),
        ("oln.b", TensorType::F32, HIDDEN),
    ] {
        tensors.push((format!("l0.{s}"), ty, n));
    }
    let dir_len: usize = 4 + tensors.iter().map(|(n, _, _)| 2 + n.len() + 1 + 4 + 8 + 8).sum::<usize>();
    let mut offset = b.len() + dir_len;
    let mut data = Vec::new();
    b.extend_from_slice(&(tensors.len() as i32).to_le_bytes());
    let mut seed = 1u32;
    for (name, ty, n) in &tensors {
        let len = ty.byte_len(*n).expect("len");
        b.extend_from_slice(&(name.len() as u16).to_le_bytes());
        b.extend_from_slice(name.as_bytes());
        b.push(match ty {
            TensorType::F32 => 0,
            TensorType::Q4_0 => 1,
        });
        b.extend_from_slice(&(*n as u32).to_le_bytes());
        b.extend_from_slice(&(offset as u64).to_le_bytes());
        b.extend_from_slice(&(len as u64).to_le_bytes());
        offset += len;
        for i in 0..len {
            seed = seed.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            let byte = (seed >> 24) as u8;
            match ty {
                // fp16 scale 0.01 (0x211f) at each block start, random nibbles.
                TensorType::Q4_0 => data.push(match i % 18 {
                    0 => 0x1f,
                    1 => 0x21,
                    _ => byte,
                }),
                TensorType::F32 => {
                    if i % 4 == 0 {
                        let v = if name.ends_with("ln.w") { 1.0 } else { (byte as f32 - 128.0) / 1280.0 };
                        data.extend_from_slice(&v.to_le_bytes());
                    }
                }
            }
        }
    }
    b.extend_from_slice(&data);
    b
}

#[test]
fn synthetic_file_parses_and_embeds() {
    let bytes = synthetic_model();
    let file = format::parse_header(&bytes).expect("parse");
    assert_eq!(file.header.hidden, HIDDEN);
    assert_eq!(file.header.max_positions, POSITIONS);
    assert_eq!(file.vocab.len(), PIECES.len());
    assert_eq!(file.normalizer.len(), 3);
    assert_eq!(file.tensors.len(), 5 + 16);

    let m = E5Embedder::from_bytes(bytes).expect("load");
    assert_eq!(m.dim(), HIDDEN);
    assert!(m.model_id().starts_with("multilingual-e5-small-q4@"));
    assert_eq!(m.model_id().len(), "multilingual-e5-small-q4@".len() + 12);
    let texts = ["ab", "a b c", "", "ab ab ab ab ab ab ab ab ab ab ab ab ab ab ab ab ab ab"];
    let batch = m.embed(&texts, EmbedKind::Passage).expect("embed");
    for (t, v) in texts.iter().zip(&batch) {
        assert_eq!(v.len(), HIDDEN);
        let norm: f32 = v.iter().map(|x| x * x).sum();
        assert!((norm - 1.0).abs() < 1e-4, "{t:?}: |v|² = {norm}");
        let single = m.embed(&[t], EmbedKind::Passage).expect("single").remove(0);
        let diff = single.iter().zip(v).map(|(a, b)| (a - b).abs()).fold(0.0, f32::max);
        assert!(diff < 1e-4, "{t:?}: batch differs by {diff}");
    }
    // 16 positions: the long text is cut to 16 tokens.
    assert_eq!(m.token_ids(texts[3], EmbedKind::Passage).len(), POSITIONS);
}

#[test]
fn synthetic_tokenizer() {
    let bytes = synthetic_model();
    let file = format::parse_header(&bytes).expect("parse");
    let tok = E5Tokenizer::new(file.vocab, file.normalizer);
    assert_eq!(tok.normalize("  ab \t\u{1}  b "), "▁ab▁b▁");
    assert_eq!(tok.normalize("Ａb"), "▁ab");
    assert_eq!(tok.normalize(""), "");
    assert_eq!(tok.normalize("\u{1}"), "");
    // "▁ab" beats "▁a" + "b" (-2.5 vs -6.5) and "▁" + "ab" (-6).
    assert_eq!(tok.encode("ab", 512), vec![0, 7, 2]);
    // Unknown runs fuse into one <unk>; "c" is known.
    assert_eq!(tok.encode("a xyz c", 512), vec![0, 9, 4, 3, 4, 10, 2]);
    // Control pieces never match inside text.
    assert_eq!(tok.piece_id("</s>"), None);
    assert_eq!(tok.piece_id("<mask>"), None);
    assert_eq!(tok.encode_content("<mask>", 100), vec![4, 3, 5, 3]);
    assert_eq!(tok.encode("咖啡", 512), vec![0, 4, 12, 2]);
    assert_eq!(tok.encode("", 512), vec![0, 2]);
    // Truncation keeps <s> … </s>.
    assert_eq!(tok.encode("ab ab ab ab", 4), vec![0, 7, 7, 2]);
    assert_eq!(tok.encode("ab", 0), vec![0, 2]);
}

#[test]
fn every_truncation_is_rejected() {
    let bytes = synthetic_model();
    for len in 0..bytes.len() {
        match format::parse_header(&bytes[..len]) {
            Err(Error::IncompatibleFormat(_)) => {}
            other => panic!("truncated to {len}: {other:?}"),
        }
        if len % 97 == 0 {
            assert!(matches!(E5Embedder::from_bytes(bytes[..len].to_vec()), Err(Error::IncompatibleFormat(_))));
        }
    }
}

#[test]
fn random_corruption_never_panics() {
    let bytes = synthetic_model();
    let data_start =
        format::parse_header(&bytes).expect("parse").tensors.iter().map(|t| t.offset).min().expect("tensors");
    let mut rng = SmallRng::seed_from_u64(7);
    let mut rejected = 0;
    for round in 0..3000 {
        let mut bad = bytes.clone();
        for _ in 0..rng.gen_range(1..4) {
            // Mostly the metadata, where corruption matters.
            let i = rng.gen_range(0..if round % 4 == 0 { bad.len() } else { data_start });
            bad[i] = match rng.gen_range(0..3) {
                0 => rng.gen(),
                1 => bad[i] ^ (1 << rng.gen_range(0..8)),
                _ => 0xff,
            };
        }
        match format::parse_header(&bad) {
            Ok(_) => {
                // Whatever parses must load and embed without panicking.
                if let Ok(m) = E5Embedder::from_bytes(bad) {
                    let _ = m.embed(&["ab c", "咖啡"], EmbedKind::Query);
                }
            }
            Err(e) => {
                assert!(matches!(e, Error::IncompatibleFormat(_)), "{e:?}");
                rejected += 1;
            }
        }
    }
    eprintln!("{rejected} of 3000 corrupted files rejected, the rest parsed and embedded");
    assert!(rejected > 100);
}
