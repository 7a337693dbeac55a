#!/usr/bin/env python3
"""Convert a sentence-transformers BERT model directory (config.json,
model.safetensors, tokenizer.json, modules.json, 1_Pooling/config.json) to a
GGUF file that llama.cpp's llama-server can load with --embedding.

With --rank-head the file also carries a scoring head, so that llama-server
started with rank pooling (`serve.py --pooling rank`) serves `/v1/rerank`:
the model's own pooler (`pooler.dense`, tanh) as llama.cpp's `cls` tensor
and, as `cls.output`, a fixed unit vector drawn from a seeded generator
(seed 0) with a zero bias.  The head is not trained: its scores are the
server's real answers to the rerank protocol but carry no relevance, which
is what a test of the protocol (order, scores, failure) needs.  No trained
cross-encoder is installable from the package registries.

Torch-free: only numpy + the `gguf` package (pure Python, from PyPI).  Mirrors
what llama.cpp's convert_hf_to_gguf.py (conversion/bert.py) writes for
BertModel, which cannot be used here because it imports torch.

usage: st2gguf.py MODEL_DIR OUT.gguf [--rank-head]
"""
import json
import struct
import sys
from pathlib import Path

import numpy as np
import gguf

ST_DTYPES = {"F32": np.float32, "F16": np.float16}


def read_safetensors(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        base = 8 + n
    raw = np.memmap(path, dtype=np.uint8, mode="r")
    for name, meta in header.items():
        if name == "__metadata__":
            continue
        dt = ST_DTYPES.get(meta["dtype"])
        if dt is None:  # e.g. I64 position_ids buffer
            continue
        a, b = meta["data_offsets"]
        arr = np.frombuffer(raw[base + a: base + b], dtype=dt).reshape(meta["shape"])
        yield name, arr


def main(model_dir, out, rank_head=False):
    d = Path(model_dir)
    cfg = json.loads((d / "config.json").read_text())
    if cfg.get("model_type") != "bert":
        sys.exit(f"only BERT models are supported, got {cfg.get('model_type')}")
    n_layer = cfg["num_hidden_layers"]
    arch = gguf.MODEL_ARCH.BERT
    w = gguf.GGUFWriter(out, gguf.MODEL_ARCH_NAMES[arch])

    w.add_name(d.name)
    w.add_block_count(n_layer)
    w.add_context_length(cfg["max_position_embeddings"])
    w.add_embedding_length(cfg["hidden_size"])
    w.add_feed_forward_length(cfg["intermediate_size"])
    w.add_head_count(cfg["num_attention_heads"])
    w.add_layer_norm_eps(cfg.get("layer_norm_eps", 1e-12))
    w.add_causal_attention(False)
    w.add_file_type(gguf.LlamaFileType.ALL_F32)

    # pooling, as sentence-transformers' modules.json / 1_Pooling says
    pooling = gguf.PoolingType.MEAN
    mods = d / "modules.json"
    if mods.is_file():
        for m in json.loads(mods.read_text()):
            if m["type"].endswith("Pooling"):
                pc = json.loads((d / m["path"] / "config.json").read_text())
                if pc.get("pooling_mode_cls_token"):
                    pooling = gguf.PoolingType.CLS
                elif pc.get("pooling_mode_mean_tokens"):
                    pooling = gguf.PoolingType.MEAN
                else:
                    sys.exit(f"unsupported pooling {pc}")
    w.add_pooling_type(pooling)

    # WordPiece vocab -> llama.cpp "bert" (WPM) phantom-space vocab
    tok = json.loads((d / "tokenizer.json").read_text())
    if tok["model"]["type"] != "WordPiece":
        sys.exit("tokenizer.json is not WordPiece")
    vocab = tok["model"]["vocab"]
    n_vocab = cfg.get("vocab_size", len(vocab))
    rev = {i: t for t, i in vocab.items()}
    special = {a["content"] for a in tok.get("added_tokens", []) if a.get("special")}
    tokens, types = [], []
    for i in range(n_vocab):
        t = rev.get(i)
        if t is None:
            tokens.append(f"[PAD{i}]")
            types.append(gguf.TokenType.UNUSED)
        elif t in special:
            tokens.append(t)
            types.append(gguf.TokenType.CONTROL)
        else:
            tokens.append(t[2:] if t.startswith("##") else "\u2581" + t)
            types.append(gguf.TokenType.NORMAL)
    w.add_token_type_count(cfg.get("type_vocab_size", 1))
    w.add_tokenizer_model("bert")
    w.add_tokenizer_pre("default")
    w.add_token_list(tokens)
    w.add_token_types(types)
    gguf.SpecialVocab(d, n_vocab=len(tokens)).add_to_gguf(w)

    tmap = gguf.get_tensor_name_map(arch, n_layer)
    for name, arr in read_safetensors(d / "model.safetensors"):
        if name.startswith("bert."):
            name = name[5:]
        if rank_head and name.startswith("pooler.dense."):
            # llama.cpp's rank pooling: cls (dense + tanh), then cls.output
            w.add_tensor("cls." + name.rsplit(".", 1)[1], np.ascontiguousarray(arr, dtype=np.float32))
            continue
        if name.startswith(("pooler.", "cls.")) or name == "embeddings.position_ids":
            continue
        new = tmap.get_name(name, try_suffixes=(".weight", ".bias"))
        if new is None:
            sys.exit(f"cannot map tensor {name}")
        w.add_tensor(new, np.ascontiguousarray(arr, dtype=np.float32))

    if rank_head:
        v = np.random.default_rng(0).standard_normal((1, cfg["hidden_size"])).astype(np.float32)
        w.add_tensor("cls.output.weight", v / np.linalg.norm(v))
        w.add_tensor("cls.output.bias", np.zeros(1, dtype=np.float32))

    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    print(f"wrote {out}")


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if a != "--rank-head"]
    if len(args) != 2 or len(sys.argv) - 1 - len(args) > 1:
        sys.exit(__doc__)
    main(args[0], args[1], rank_head="--rank-head" in sys.argv[1:])
