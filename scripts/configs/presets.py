#!/usr/bin/env python3
"""Write the model presets of 2025-2026 flagships from their real config.json files.

Each entry of `PRESETS` names a vendored config (crates/core/tests/data/configs/2026/<folder>), the
preset's id and display name, and the parameter counts its authors publish (model cards, technical
reports). The preset's `[model.config]` is the config's own keys, less those that change neither
FLOPs, bytes nor memory (token ids, RoPE scaling, dtypes' training settings, auto_map …), so the
preset resolves to the same shapes as the config (`presets_equal_the_authors_configs` checks).

    python3 scripts/configs/presets.py > /tmp/presets.toml

and the output replaces the block between the `# --- 2026 presets` markers of
crates/core/data/models.toml.
"""
import json
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[2]
CONFIGS = ROOT / "crates/core/tests/data/configs/2026"

# (folder, id, aliases, display, published total, published active or None)
PRESETS = [
    ("Qwen--Qwen3.5-397B-A17B", "qwen3.5-397b-a17b", ["qwen3.5-397b"],
     "Qwen3.5-397B-A17B (Gated DeltaNet + gated attention 3:1, 512 experts top-10 + shared, MTP, vision)", 397e9, 17e9),
    ("Qwen--Qwen3.5-27B", "qwen3.5-27b", ["qwen3.6-27b"],
     "Qwen3.5-27B (Gated DeltaNet + gated attention 3:1, dense, fp32 recurrent state, vision)", 27e9, None),
    ("Qwen--Qwen3.5-35B-A3B", "qwen3.5-35b-a3b", ["qwen3.6-35b-a3b"],
     "Qwen3.5-35B-A3B (Gated DeltaNet hybrid, 256 experts top-8 + shared)", 35e9, 3e9),
    ("deepseek-ai--DeepSeek-V3.2", "deepseek-v3.2", [],
     "DeepSeek-V3.2 671B (MLA + DeepSeek Sparse Attention: lightning indexer, top-2,048)", 671e9, 37e9),
    ("deepseek-ai--DeepSeek-V4-Flash", "deepseek-v4-flash", [],
     "DeepSeek-V4-Flash 284B (compressed sparse attention, hyper-connections, fp4 experts)", 284e9, 13e9),
    ("zai-org--GLM-5", "glm-5", [],
     "GLM-5 744B (MLA + DeepSeek Sparse Attention, 256 experts top-8 + shared)", 744e9, 40e9),
    ("moonshotai--Kimi-K2.5", "kimi-k2.5", ["kimi-k2"],
     "Kimi-K2.5 1T (DeepSeek-V3 shapes, 384 experts top-8, int4 experts, MoonViT)", 1040e9, 32e9),
    ("moonshotai--Kimi-K3", "kimi-k3", [],
     "Kimi-K3 2.8T (Kimi Delta Attention + gated MLA 3:1, latent MoE of 896 experts top-16)", 2780e9, 104e9),
    ("meta-llama--Llama-4-Maverick-17B-128E-Instruct", "llama-4-maverick", [],
     "Llama 4 Maverick 400B (chunked local attention + global NoPE layers, 128 experts top-1 + shared)", 400e9, 17e9),
    ("meta-llama--Llama-4-Scout-17B-16E-Instruct", "llama-4-scout", [],
     "Llama 4 Scout 109B (chunked local attention + global NoPE layers, 16 experts top-1 + shared)", 109e9, 17e9),
    ("nvidia--Gemma-4-31B-IT-NVFP4", "gemma-4-31b", [],
     "Gemma 4 31B (sliding and full layers, keys as values on full layers; NVIDIA NVFP4 MLPs)", 30.7e9, None),
    ("google--gemma-4-26B-A4B", "gemma-4-26b-a4b", [],
     "Gemma 4 26B-A4B (sliding and full layers, 128 experts top-8 beside a dense MLP)", 25.2e9, 3.8e9),
    ("MiniMaxAI--MiniMax-M2.5", "minimax-m2.5", [],
     "MiniMax-M2.5 230B (GQA, 256 experts top-8, fp8 checkpoint)", 229.9e9, 9.8e9),
    ("MiniMaxAI--MiniMax-M3", "minimax-m3", [],
     "MiniMax-M3 428B (block-sparse attention after 3 dense layers, 128 experts top-4 + shared)", 428e9, 23e9),
    ("nvidia--NVIDIA-Nemotron-3-Super-120B-A12B-FP8", "nemotron-3-super-120b-a12b", ["nemotron-3-super"],
     "NVIDIA Nemotron 3 Super 120B-A12B (Mamba-2 + attention hybrid, latent MoE of 512 experts top-22)", 120e9, 12e9),
    ("nvidia--NVIDIA-Nemotron-3-Nano-30B-A3B-BF16", "nemotron-3-nano-30b-a3b", ["nemotron-3-nano"],
     "NVIDIA Nemotron 3 Nano 30B-A3B (Mamba-2 + attention hybrid, 128 experts top-6 + shared)", 31.6e9, 3.2e9),
    ("stepfun-ai--Step-3.7-Flash", "step-3.7-flash", [],
     "Step-3.7-Flash 196B (sliding and full layers, 288 experts top-8 + shared)", 196e9, 11e9),
    ("XiaomiMiMo--MiMo-V2-Flash", "mimo-v2-flash", [],
     "MiMo-V2-Flash 309B (sliding-window hybrid 39:9, 256 experts top-8, fp8 checkpoint)", 309e9, 15e9),
    ("Qwen--Qwen3-VL-8B-Instruct", "qwen3-vl-8b", [],
     "Qwen3-VL-8B (the Qwen3-8B text model and its vision tower)", 8.77e9, None),
]

DROP = {
    "architectures", "auto_map", "bos_token_id", "eos_token_id", "pad_token_id", "image_token_id", "video_token_id",
    "vision_start_token_id", "vision_end_token_id", "media_placeholder_token_id", "image_token_index",
    "boi_token_index", "eoi_token_index", "audio_token_index", "boa_token_index", "eoa_token_index",
    "initializer_range", "transformers_version", "use_cache", "rope_scaling", "rope_parameters", "rope_theta",
    "rms_norm_eps", "layer_norm_epsilon", "norm_eps", "attention_dropout", "hidden_dropout", "_name_or_path",
    "id2label", "label2id", "max_length", "min_length", "tokenizer_class", "output_attentions",
    "output_hidden_states", "router_aux_loss_coef", "rope_interleave", "indexer_rope_interleave",
    "compress_rope_theta", "swa_rope_theta", "time_step_min", "time_step_max", "time_step_floor",
    "time_step_limit", "audio_config", "quantization_config",
}


def keep(k, v):
    return k not in DROP and not k.endswith("_token_id") and v is not None


def scalar(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, list):
        return "[" + ", ".join(scalar(x) for x in v) + "]"
    raise ValueError(v)


def table(prefix, obj, out):
    plain = {k: v for k, v in obj.items() if keep(k, v) and not isinstance(v, dict)}
    nested = {k: v for k, v in obj.items() if keep(k, v) and isinstance(v, dict)}
    out.append(f"[{prefix}]")
    for k, v in plain.items():
        if isinstance(v, list) and any(isinstance(x, dict) for x in v):
            continue
        out.append(f"{k} = {scalar(v)}")
    for k, v in obj.items():
        if keep(k, v) and isinstance(v, list) and any(isinstance(x, dict) for x in v):
            for item in v:
                out.append(f"[[{prefix}.{k}]]")
                for ik, iv in item.items():
                    if isinstance(iv, dict):
                        out.append(f"[{prefix}.{k}.{ik}]")
                        for jk, jv in iv.items():
                            if jv is not None:
                                out.append(f"{jk} = {scalar(jv)}")
                    elif iv is not None:
                        out.append(f"{ik} = {scalar(iv)}")
    for k, v in nested.items():
        table(f"{prefix}.{k}", v, out)


def main():
    out = ["# --- 2026 presets (scripts/configs/presets.py writes this block from the vendored configs)"]
    for folder, name, aliases, display, total, active in PRESETS:
        cfg = json.loads((CONFIGS / folder / "config.json").read_text())
        q = cfg.get("quantization_config") or (cfg.get("text_config") or {}).get("quantization_config")
        out += ["", "[[model]]", f"name = {json.dumps(name)}"]
        if aliases:
            out.append("aliases = " + scalar(aliases))
        out += [f"display = {json.dumps(display)}", f"published_params = {total:g}"]
        if active:
            out.append(f"published_active_params = {active:g}")
        out.append(f'reference_config = "2026/{folder}"')
        table("model.config", cfg, out)
        if q:
            table("model.config.quantization_config", q, out)
    out.append("# --- end of 2026 presets")
    print("\n".join(out))


if __name__ == "__main__":
    main()
