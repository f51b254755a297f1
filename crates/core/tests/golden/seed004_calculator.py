# Seed 004's calculator ("Decode Compute Math, in depth"), copied verbatim from
# shared/seeds/004_*.txt, plus the calls the seed's text makes. Regenerate the golden file with:
#   python3 seed004_calculator.py > seed004_report.txt
from dataclasses import dataclass

@dataclass
class Model:
    layers: int = 32        # Llama 3 8B
    d: int = 4096           # hidden size
    heads: int = 32
    kv_heads: int = 8
    head_dim: int = 128
    ffn: int = 14336        # SwiGLU intermediate size
    vocab: int = 128256
    w_bytes: float = 2.0    # BF16 weights
    kv_bytes: float = 2.0   # BF16 KV cache

def step_ledger(m, batch, ctx):
    """FLOPs and HBM bytes for one decode step: `batch` sequences, each with `ctx` cached tokens."""
    kv = m.kv_heads * m.head_dim
    weights = {                     # matrix shapes (in, out), read once per step
        "qkv_proj": m.d * (m.d + 2 * kv),
        "o_proj":   m.d * m.d,
        "mlp":      3 * m.d * m.ffn,  # gate, up, down
    }
    rows = {}
    for name, n in weights.items():
        rows[name] = (2 * n * batch * m.layers,                 # 2 FLOPs per weight per token
                      n * m.w_bytes * m.layers)                 # bytes: independent of batch
    # Attention: every sequence reads its own K and V; nothing is shared across the batch.
    attn_flops = 4 * m.heads * m.head_dim * ctx * batch * m.layers   # QK^T and PV
    attn_bytes = 2 * kv * ctx * m.kv_bytes * batch * m.layers         # K and V
    rows["attention"] = (attn_flops, attn_bytes)
    rows["lm_head"] = (2 * m.d * m.vocab * batch, m.d * m.vocab * m.w_bytes)
    return rows

def report(m, batch, ctx, peak=989e12, bw=3.35e12):
    rows = step_ledger(m, batch, ctx)
    tf = sum(f for f, _ in rows.values()); tb = sum(b for _, b in rows.values())
    print(f"batch={batch} ctx={ctx}")
    for k, (f, b) in rows.items():
        print(f"  {k:10s} {f/1e9:9.1f} GFLOP {b/1e9:7.2f} GB  intensity {f/b:6.1f}")
    print(f"  total      {tf/1e9:9.1f} GFLOP {tb/1e9:7.2f} GB  intensity {tf/tb:6.1f}")
    print(f"  floors: memory {tb/bw*1e3:.2f} ms, compute {tf/peak*1e3:.2f} ms")

def step_time(m, batch, ctx, peak=989e12 * 0.6, bw=3.35e12 * 0.8):
    rows = step_ledger(m, batch, ctx)
    return sum(max(f / peak, b / bw) for f, b in rows.values())

report(Model(), 1, 2048)
report(Model(), 64, 2048)
report(Model(), 8, 32768)
report(Model(), 128, 2048)
for b in [1, 8, 32, 64, 128]:
    t = step_time(Model(), b, 2048)
    print(b, round(t * 1e3, 2), "ms", round(b / t), "tok/s")
