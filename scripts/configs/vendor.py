#!/usr/bin/env python3
"""Vendor the real config.json files of 2025-2026 models into crates/core/tests/data/configs/2026/.

Source: NVIDIA AIConfigurator's public repository, which ships a `config.json` (and, for NVIDIA
ModelOpt exports, an `hf_quant_config.json`) for every model it supports, at
`aic-core/src/aiconfigurator_core/model_configs/<org>--<name>_config.json`.

Usage (reproduces the folder byte for byte):

    git clone https://github.com/ai-dynamo/aiconfigurator aic
    python3 scripts/configs/vendor.py aic 095f58a51c4ca8e61b66ec108d86f223f8d559ce

Each file is taken with `git show <commit>:<path>`, unchanged. Files over 100 KB (MiniMax-M3-NVFP4's
3 MB per-module quantisation list) and the models already vendored in `tests/data/configs/` are
left out. `SOURCES.md` lists every file with its path, git blob, sha256 and size.
"""
import hashlib
import pathlib
import subprocess
import sys

FOLDER = "aic-core/src/aiconfigurator_core/model_configs"
MAX_BYTES = 100_000
# Models vendored in tests/data/configs/ already (by their Hugging Face ids).
ALREADY = {
    "meta-llama--Meta-Llama-3.1-8B", "meta-llama--Meta-Llama-3.1-70B", "meta-llama--Meta-Llama-3.1-405B",
    "mistralai--Mixtral-8x7B-v0.1", "mistralai--Mixtral-8x22B-v0.1", "Qwen--Qwen3-8B", "Qwen--Qwen3-30B-A3B",
    "Qwen--Qwen3-235B-A22B", "deepseek-ai--DeepSeek-V3", "openai--gpt-oss-20b", "openai--gpt-oss-120b",
    "Qwen--Qwen3-30B-A3B-FP8", "deepseek-ai--DeepSeek-R1",
}


def git(repo, *args):
    return subprocess.run(["git", "-C", repo, *args], check=True, capture_output=True).stdout


def main():
    repo, commit = sys.argv[1], sys.argv[2]
    out = pathlib.Path(__file__).resolve().parents[2] / "crates/core/tests/data/configs/2026"
    out.mkdir(parents=True, exist_ok=True)
    names = git(repo, "ls-tree", "--name-only", commit, FOLDER + "/").decode().split()
    rows = []
    for path in sorted(names):
        base = path.rsplit("/", 1)[1]
        if not base.endswith("_config.json") or base.endswith("_hf_quant_config.json"):
            continue
        model = base[: -len("_config.json")]
        if model in ALREADY:
            continue
        files = [(path, "config.json")]
        sidecar = f"{FOLDER}/{model}_hf_quant_config.json"
        if sidecar in names:
            files.append((sidecar, "hf_quant_config.json"))
        blobs = [(p, dest, git(repo, "show", f"{commit}:{p}")) for p, dest in files]
        if any(len(b) > MAX_BYTES for _, _, b in blobs):
            continue
        for p, dest, data in blobs:
            (out / model).mkdir(exist_ok=True)
            (out / model / dest).write_bytes(data)
            blob = git(repo, "rev-parse", f"{commit}:{p}").decode().strip()
            rows.append((f"{model}/{dest}", p, blob, hashlib.sha256(data).hexdigest(), len(data)))
    lines = [
        "# Sources of the vendored config.json files of 2025-2026 models",
        "",
        "Every file here is a byte-for-byte copy from the public repository of NVIDIA AIConfigurator",
        f"(`github.com/ai-dynamo/aiconfigurator`, commit `{commit}`), which ships the Hugging Face",
        "`config.json` (and the ModelOpt `hf_quant_config.json`) of every model it supports. None was written,",
        "reconstructed or edited by us. `scripts/configs/vendor.py` reproduces this folder;",
        "`crates/core/tests/it/configs_2026.rs` reads every file and checks its size and checksum against this table.",
        "The folder name is `<org>--<name>`, the model's Hugging Face id with `/` as `--`.",
        "",
        "| file | source path | git blob | sha256 | bytes |",
        "|---|---|---|---|---|",
    ]
    lines += [f"| `{f}` | `{p}` | {b} | {h} | {n} |" for f, p, b, h, n in rows]
    (out / "SOURCES.md").write_text("\n".join(lines) + "\n")
    print(f"{len(rows)} files")


if __name__ == "__main__":
    main()
