"""GGUF → safetensors bf16, run as a script by the vLLM venv's python (vLLM cannot load GGUF).

Standalone on purpose: it runs in another interpreter (the one that has torch, transformers, gguf and
accelerate), so it imports nothing of the project. ``python convert_gguf.py MODEL.gguf OUT_DIR``.
The recipe, as measured when this path was set up: transformers dequantizes the GGUF on load; its
quantization bookkeeping must be dropped or ``save_pretrained`` writes a config vLLM refuses.
"""

from __future__ import annotations

import sys
from pathlib import Path


def convert(gguf: Path, out: Path) -> None:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    directory, name = str(gguf.parent), gguf.name
    model = AutoModelForCausalLM.from_pretrained(directory, gguf_file=name, dtype=torch.bfloat16)
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    # torch types Module.__setattr__'s value as Tensor | Module; transformers' models hold plain values too
    model.hf_quantizer = None  # type: ignore[assignment]
    model.is_quantized = False  # type: ignore[assignment]
    model.save_pretrained(out)
    # the tokenizer (with its ChatML chat template) from the same GGUF, beside the weights
    AutoTokenizer.from_pretrained(directory, gguf_file=name).save_pretrained(out)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: convert_gguf.py MODEL.gguf OUT_DIR")
    convert(Path(sys.argv[1]), Path(sys.argv[2]))
