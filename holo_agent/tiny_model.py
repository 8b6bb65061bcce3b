"""A tiny random-weight model of Holo3.1's family, *made* locally (nothing is downloaded).

``python -m holo_agent.tiny_model OUT_DIR [--seed N]`` writes a complete model folder that
``vllm serve OUT_DIR`` loads: ``config.json`` (``Qwen3_5ForConditionalGeneration``, the class of
the Qwen3.5 models Holo3.1 is fine-tuned from: a hybrid of Gated-DeltaNet linear-attention and
full-attention layers with mRoPE, and a ViT whose patches are merged 2x2 into the text stream),
random weights (``model.safetensors``, seeded: the same seed writes the same bytes), a byte-level
BPE tokenizer trained here on a few strings of the agent loop's own format plus the family's
special tokens (``<|im_start|>``, ``<|vision_start|>``, ``<|image_pad|>``, ``<think>``,
``<tool_call>``, ...), a chat template in the family's format (system/user/assistant turns,
``<|vision_start|><|image_pad|><|vision_end|>`` per image part, ``<think>`` opened by the
generation prompt unless ``enable_thinking`` is false), the image processor of the family
(``Qwen2VLImageProcessor``: 16-pixel patches, 2x2 merge, so a 1920x1080 screenshot is 2040 image
tokens, as for the real model) and a ``generation_config.json``.

What it shares with Holo3.1: the architecture class and its layer kinds, the special tokens and
chat-template layout, the image processor and therefore the image-token arithmetic (what
``--max-model-len`` and ``--limit-mm-per-prompt`` are checked against), the way vLLM serves it
(chat template, multimodal processor, reasoning and tool-call parsers, structured outputs).
What it does not: sizes (2 text layers of width 64, a 2-layer vision tower, a vocabulary of a few
hundred tokens instead of ~248k), trained weights (its answers are noise; under a JSON schema
they are still well-formed Steps), and the real model's chat template text, which is not
published with the weights here.

Needs ``torch``, ``transformers``, ``tokenizers`` and ``safetensors`` (the serving environment
has them; the harness itself does not import this module).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

SPECIAL_TOKENS = [
    "<|endoftext|>",
    "<|im_start|>",
    "<|im_end|>",
    "<|object_ref_start|>",
    "<|object_ref_end|>",
    "<|box_start|>",
    "<|box_end|>",
    "<|quad_start|>",
    "<|quad_end|>",
    "<|vision_start|>",
    "<|vision_end|>",
    "<|vision_pad|>",
    "<|image_pad|>",
    "<|video_pad|>",
]
# added tokens that are text to the template and parsers, not control tokens (as in the family).
# Left out: <tool_call> and </tool_call>. vLLM's qwen3 reasoning parser takes <tool_call> as an
# implicit end of reasoning and hands that token to the structured-output grammar, which rejects
# it and ends the request with HTTP 500; noise would sample it about once in 400 tokens.
TEXT_TOKENS = ["<tool_response>", "</tool_response>", "<think>", "</think>"]
VOCAB_SIZE = 384  # byte alphabet (256) + merges; the special tokens come on top

# A few strings in the agent loop's own format: what the BPE merges are learnt from.
CORPUS = [
    '{"note": null, "thought": "Open the menu.", "tool_call": {"tool_name": "click", '
    '"element": "File menu", "x": 120, "y": 40}}',
    '{"note": "saved", "thought": "Type the name.", "tool_call": {"tool_name": "write", '
    '"content": "hello world", "press_enter": true}}',
    '{"note": null, "thought": "Done.", "tool_call": {"tool_name": "answer", "content": "DONE"}}',
    '<observation> </observation> <tool_output tool="click"> clicked </tool_output>',
    "You are a computer-use agent. Reply with exactly one JSON Step object.",
    "<task> Open the file and add a line. </task>",
]

CHAT_TEMPLATE = (
    "{%- macro render(content) -%}"
    "{%- if content is string -%}{{ content }}"
    "{%- elif content is none -%}"
    "{%- else -%}{%- for part in content -%}"
    "{%- if part.type == 'image' or part.type == 'image_url' or 'image' in part -%}"
    "<|vision_start|><|image_pad|><|vision_end|>"
    "{%- elif part.type == 'video' or 'video' in part -%}"
    "<|vision_start|><|video_pad|><|vision_end|>"
    "{%- elif part.type == 'text' -%}{{ part.text }}"
    "{%- endif -%}{%- endfor -%}{%- endif -%}"
    "{%- endmacro -%}"
    "{%- for message in messages -%}"
    "{%- if message.role == 'assistant' -%}"
    "{%- set text = render(message.content) -%}"
    "{%- if '</think>' in text -%}{%- set text = text.split('</think>')[-1].lstrip('\\n') -%}"
    "{%- endif -%}"
    "<|im_start|>assistant\\n{{ text }}<|im_end|>\\n"
    "{%- elif message.role == 'tool' -%}"
    "<|im_start|>user\\n<tool_response>\\n{{ render(message.content) }}\\n</tool_response>"
    "<|im_end|>\\n"
    "{%- else -%}"
    "<|im_start|>{{ message.role }}\\n{{ render(message.content) }}<|im_end|>\\n"
    "{%- endif -%}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}<|im_start|>assistant\\n"
    "{%- if enable_thinking is defined and enable_thinking is false -%}<think>\\n\\n</think>\\n\\n"
    "{%- else -%}<think>\\n{%- endif -%}"
    "{%- endif -%}"
)


def build_tokenizer(out: Path) -> tuple[dict[str, int], int]:
    """Train the byte-level BPE, save it as a transformers fast tokenizer; the special tokens'
    ids and the vocabulary's size."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB_SIZE,
        show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tok.train_from_iterator(CORPUS, trainer=trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        model_max_length=131072,
    )
    fast.add_special_tokens({"additional_special_tokens": SPECIAL_TOKENS})
    fast.add_tokens(TEXT_TOKENS)
    fast.chat_template = CHAT_TEMPLATE
    fast.save_pretrained(out)
    return {t: int(fast.convert_tokens_to_ids(t)) for t in SPECIAL_TOKENS + TEXT_TOKENS}, len(fast)


def model_config(ids: dict[str, int], vocab_size: int) -> dict[str, Any]:
    """The ``Qwen3_5Config`` fields of the tiny model (everything else: the class defaults)."""
    vocab = (vocab_size + 63) // 64 * 64  # padded, as the family pads its embedding
    text = {
        "vocab_size": vocab,
        "hidden_size": 64,
        "intermediate_size": 128,
        "num_hidden_layers": 2,
        "layer_types": ["linear_attention", "full_attention"],
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "head_dim": 32,
        "linear_key_head_dim": 128,
        "linear_value_head_dim": 128,
        "linear_num_key_heads": 1,
        "linear_num_value_heads": 2,
        "linear_conv_kernel_dim": 4,
        "max_position_embeddings": 131072,
        "tie_word_embeddings": False,
        "partial_rotary_factor": 0.25,
        "rope_parameters": {
            "rope_type": "default",
            "rope_theta": 10000000.0,
            "partial_rotary_factor": 0.25,
            "mrope_section": [2, 1, 1],
            "mrope_interleaved": True,
        },
        "eos_token_id": ids["<|im_end|>"],
        "bos_token_id": None,
        "pad_token_id": ids["<|endoftext|>"],
    }
    vision = {
        "depth": 2,
        "hidden_size": 64,
        "intermediate_size": 128,
        "num_heads": 4,
        "patch_size": 16,
        "spatial_merge_size": 2,
        "temporal_patch_size": 2,
        "out_hidden_size": 64,
        "num_position_embeddings": 2304,
    }
    return {
        "text_config": text,
        "vision_config": vision,
        "image_token_id": ids["<|image_pad|>"],
        "video_token_id": ids["<|video_pad|>"],
        "vision_start_token_id": ids["<|vision_start|>"],
        "vision_end_token_id": ids["<|vision_end|>"],
        "tie_word_embeddings": False,
    }


def build_model(out: Path, ids: dict[str, int], vocab_size: int, seed: int) -> int:
    """Random weights from ``seed`` in the config's class; the parameter count."""
    import torch
    from transformers import Qwen3_5Config, Qwen3_5ForConditionalGeneration

    torch.manual_seed(seed)
    config = Qwen3_5Config(**model_config(ids, vocab_size))
    config.architectures = ["Qwen3_5ForConditionalGeneration"]
    model = Qwen3_5ForConditionalGeneration(config).to(torch.bfloat16)
    model.save_pretrained(out, safe_serialization=True)
    return sum(p.numel() for p in model.parameters())


def build_processor(out: Path) -> None:
    """The family's image processor (PIL flavour, no torchvision needed to write it)."""
    from transformers.models.qwen2_vl import Qwen2VLImageProcessorPil

    proc = Qwen2VLImageProcessorPil(
        patch_size=16,
        merge_size=2,
        temporal_patch_size=2,
        size={"shortest_edge": 65536, "longest_edge": 16777216},
        image_mean=[0.5, 0.5, 0.5],
        image_std=[0.5, 0.5, 0.5],
    )
    proc.save_pretrained(out)
    cfg = json.loads((out / "preprocessor_config.json").read_text())
    cfg["image_processor_type"] = "Qwen2VLImageProcessor"
    cfg["processor_class"] = "Qwen3VLProcessor"
    (out / "preprocessor_config.json").write_text(json.dumps(cfg, indent=2) + "\n")


def make(out: Path, seed: int = 0) -> dict[str, Any]:
    """Write the whole model folder; a summary (parameters, bytes, token ids)."""
    out.mkdir(parents=True, exist_ok=True)
    ids, vocab_size = build_tokenizer(out)
    params = build_model(out, ids, vocab_size, seed)
    build_processor(out)
    gen = {
        "eos_token_id": [ids["<|im_end|>"], ids["<|endoftext|>"]],
        "pad_token_id": ids["<|endoftext|>"],
        "temperature": 0.8,
        "top_p": 0.95,
    }
    (out / "generation_config.json").write_text(json.dumps(gen, indent=2) + "\n")
    size = sum(p.stat().st_size for p in out.iterdir() if p.is_file())
    return {"dir": str(out), "parameters": params, "bytes": size, "vocab": vocab_size, "seed": seed}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m holo_agent.tiny_model",
        description="Write a tiny random-weight Holo-shaped model folder.",
    )
    ap.add_argument("out", type=Path, help="the folder to write (created)")
    ap.add_argument("--seed", type=int, default=0, help="weight seed (default 0)")
    args = ap.parse_args(argv)
    summary = make(args.out, args.seed)
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
