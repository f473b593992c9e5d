#!/usr/bin/env python3
"""Writes tests/fixtures/long/modernbert_base_8192.json: what transformers computes for one
8,192-token row through ModernBERT-base's layers (hidden 768, GeGLU 1152, global attention every
third layer, a window of 128 elsewhere), four of its 22: global, windowed, windowed, global, so
both kinds of layer and both rotary bases run over the whole row, at a fifth of the 22 layers'
test time. The weights are the CPU backend's synthetic ones (`Weights::synthetic` of
`ModelConfig::shape("modernbert-base")` with `num_hidden_layers` 4, seed 1).

The checkpoint itself would be 600 MB, too large to commit; the generator behind it is a 64-bit
LCG drawn in a fixed order, which this script reproduces in numpy (vectorised by jumping ahead),
so the C++ test builds the same weights in memory and only the reference outputs are committed:
rows of the last hidden state and its mean over the row. If the two generators ever disagree the
test's outputs are off by far more than its tolerance.

Regenerate with `tools/venv.sh && .venv/bin/python tools/gen_long_modernbert_reference.py`
(about a minute and ~4 GB of memory on 2 cores: fp32, SDPA attention).
"""
import json
from pathlib import Path

import numpy as np
import torch
import transformers
from transformers import ModernBertConfig, ModernBertModel

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "tests" / "fixtures" / "long" / "modernbert_base_8192.json"

LENGTH = 8192
SEED = 1
LAYERS = 4
# Rows of the last hidden state the fixture keeps: both ends, the middle, around a window edge.
ROWS = [0, 1, 63, 64, 65, 2047, 4096, 8127, 8190, 8191]

MUL = np.uint64(6364136223846793005)
INC = np.uint64(1442695040888963407)


def token_ids() -> list[int]:
    """The row's ids (the C++ test's formula): ordinary vocabulary entries in a fixed pattern."""
    return [1000 + (i * 7919) % 40000 for i in range(LENGTH)]


class Lcg:
    """Weights::synthetic's generator: state = state · MUL + INC (mod 2^64), each value
    offset + scale · (float(state >> 40) / 2^24 − 0.5) in float32."""

    CHUNK = 1 << 20

    def __init__(self, seed: int) -> None:
        with np.errstate(over="ignore"):
            self.state = np.uint64(seed) * np.uint64(0x9E3779B97F4A7C15) + np.uint64(1)
            # MUL^k and 1 + MUL + … + MUL^(k−1) for k = 1 … CHUNK: the state k steps ahead.
            self.powers = np.cumprod(np.full(self.CHUNK, MUL, dtype=np.uint64), dtype=np.uint64)
            shifted = np.concatenate(([np.uint64(1)], self.powers[:-1]))
            self.sums = np.cumsum(shifted, dtype=np.uint64)

    def fill(self, count: int, scale: float, offset: float = 0.0) -> np.ndarray:
        out = np.empty(count, dtype=np.float32)
        done = 0
        with np.errstate(over="ignore"):
            while done < count:
                n = min(self.CHUNK, count - done)
                states = self.powers[:n] * self.state + INC * self.sums[:n]
                self.state = states[-1]
                unit = (states >> np.uint64(40)).astype(np.float32) / np.float32(1 << 24)
                out[done : done + n] = np.float32(offset) + np.float32(scale) * (
                    unit - np.float32(0.5)
                )
                done += n
        return out


def config() -> ModernBertConfig:
    """ModelConfig::shape("modernbert-base") with LAYERS layers, in transformers' terms."""
    return ModernBertConfig(
        vocab_size=50368,
        hidden_size=768,
        num_hidden_layers=LAYERS,
        num_attention_heads=12,
        intermediate_size=1152,
        hidden_activation="gelu",
        max_position_embeddings=8192,
        global_attn_every_n_layers=3,
        local_attention=128,
        global_rope_theta=160000.0,
        local_rope_theta=10000.0,
        norm_eps=1e-5,
        norm_bias=False,
        attention_bias=False,
        mlp_bias=False,
        pad_token_id=50283,
        attn_implementation="sdpa",
    )


def synthetic_state_dict(c: ModernBertConfig) -> dict[str, torch.Tensor]:
    """The tensors in the order Weights::synthetic draws them for this description."""
    rng = Lcg(SEED)
    h, inter = c.hidden_size, c.intermediate_size
    tensors: dict[str, torch.Tensor] = {}

    def take(name: str, shape: tuple[int, ...], scale: float, offset: float = 0.0) -> None:
        values = rng.fill(int(np.prod(shape)), scale, offset)
        tensors[name] = torch.from_numpy(values.reshape(shape).copy())

    def norm(name: str) -> None:
        take(name + ".weight", (h,), 0.1, 1.0)
        rng.fill(h, 0.0)  # the shift it has not (norm_bias false): drawn, scaled to zero

    take("embeddings.tok_embeddings.weight", (c.vocab_size, h), 0.1)
    norm("embeddings.norm")
    for i in range(c.num_hidden_layers):
        p = f"layers.{i}."
        take(p + "attn.Wqkv.weight", (3 * h, h), 0.08)
        take(p + "attn.Wo.weight", (h, h), 0.08)
        take(p + "mlp.Wi.weight", (2 * inter, h), 0.08)
        take(p + "mlp.Wo.weight", (h, inter), 0.08)
        if i > 0:
            norm(p + "attn_norm")
        norm(p + "mlp_norm")
    norm("final_norm")
    return tensors


def main() -> None:
    torch.manual_seed(0)
    torch.set_num_threads(max(1, torch.get_num_threads()))
    c = config()
    model = ModernBertModel(c).eval()
    state = synthetic_state_dict(c)
    missing, unexpected = model.load_state_dict(state, strict=False)
    # Every parameter comes from the generator; buffers (rotary inverse frequencies) stay.
    params = {n for n, _ in model.named_parameters()}
    if params & set(missing) or unexpected:
        raise SystemExit(f"state dict mismatch: missing {missing}, unexpected {unexpected}")
    ids = torch.tensor([token_ids()], dtype=torch.long)
    with torch.inference_mode():
        hidden = model(input_ids=ids, attention_mask=torch.ones_like(ids)).last_hidden_state[0]
    OUT.parent.mkdir(parents=True, exist_ok=True)
    record = {
        "transformers": transformers.__version__,
        "torch": torch.__version__,
        "shape": "modernbert-base",
        "layers": LAYERS,
        "seed": SEED,
        "length": LENGTH,
        "ids": "1000 + (i * 7919) % 40000",
        "attn_implementation": "sdpa",
        "rows": ROWS,
        "hidden": [[float(v) for v in hidden[r].tolist()] for r in ROWS],
        "mean": [float(v) for v in hidden.mean(dim=0).tolist()],
    }
    OUT.write_text(json.dumps(record) + "\n")
    print(f"wrote {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
