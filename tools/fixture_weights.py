"""The weight recipe of every model fixture (tools/gen_*fixtures.py): each parameter re-drawn from
a seeded generator with non-trivial biases and LayerNorm parameters, so that a loader that drops a
bias or swaps two activations changes the outputs visibly. Kept apart from gen_fixtures.py, whose
model classes the legacy stack's transformers (4.46) does not all have, so that every stack's
generator can import it."""
import math

import torch


def is_sinusoidal(model, name):
    cfg = model.config
    return getattr(cfg, "sinusoidal_pos_embds", False) and name.endswith("embeddings.position_embeddings.weight")


def randomize(model, gen):
    """Re-draws every parameter so that each one visibly matters in the output."""
    with torch.no_grad():
        for name, p in model.named_parameters():
            if is_sinusoidal(model, name):
                continue  # keep the fixed table HF computed: it is what gets saved
            r = torch.randn(p.shape, generator=gen, dtype=torch.float32)
            if "LayerNorm" in name or "layer_norm" in name or name.rsplit(".", 2)[-2].endswith("norm"):
                p.copy_(1.0 + 0.2 * r if name.endswith("weight") else 0.2 * r)
            elif name.endswith("bias"):
                p.copy_(0.2 * r)
            elif "relative_attention_bias" in name:  # [buckets, heads]: a visible bias per bucket
                p.copy_(0.5 * r)
            elif "word_embeddings" in name:
                p.copy_(r)
            elif "embeddings" in name and "embeddings_project" not in name:  # position / token type
                p.copy_(0.5 * r)
            elif p.dim() == 2:  # Linear: [out, in]
                p.copy_(r / math.sqrt(p.shape[1]))
            else:
                raise RuntimeError(f"unexpected parameter {name} {tuple(p.shape)}")
