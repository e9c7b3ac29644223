"""Every red-team fixture through every registered prompt builder: nothing escapes its fence.

For each builder × fixture the prompt built with the fixture is compared with the prompt built with a
benign string in the same slots (:mod:`models.prompt_builders`):

- the builder's fences (``<data name="...">`` ... ``</data>``) alternate, balance, and are as many as with
  the benign string: the fences come from the builder, never from the data;
- a lenient reading (entities decoded once, any case or spacing of the tag) finds exactly the tag-like
  strings it finds in the benign prompt: the data holds nothing that reads as a fence even then;
- outside the fences the two prompts are identical, byte for byte: whatever the fixture says, it can only
  be read as data;
- no control, format (bidi, zero-width, tag) or separator character is left, and the prompt is UTF-8;
- the whole prompt stays under the builder's size limit (the 1 MB fixtures included);
- and the fixture did get in: its marker is readable inside some fence (the test is not vacuous).

The gullible test double (:mod:`models.testing.gullible`) reads every such prompt and finds no directive.
"""

from __future__ import annotations

import html
import re
import unicodedata
from functools import cache
from pathlib import Path
from typing import Any

import pytest

import tgms.pipeline.systems.prompt_builders  # noqa: F401  (registers the systems' builders)
from tests.redteam.fixtures import FIXTURES, MARKERS
from tgms.models.prompt_builders import PromptBuilder, prompt_builders
from tgms.models.testing.gullible import find_injection

BENIGN = "benign value"
BUILDERS = {b.name: b for b in prompt_builders()}
_STRICT = re.compile(r'<data name="[A-Za-z][A-Za-z0-9_-]{0,40}">\n|\n</data>')
_LENIENT = re.compile(r"<\s*/?\s*data\b[^>]*>", re.IGNORECASE)
_HIDDEN = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})


@cache
def benign(name: str) -> tuple[tuple[str, str], ...]:
    return tuple((m["role"], m["content"]) for m in BUILDERS[name].messages(BENIGN))


def strict_tags(text: str) -> list[str]:
    return [m.group(0).strip() for m in _STRICT.finditer(text)]


def fenced_and_outside(text: str) -> tuple[list[str], str]:
    """The contents of the builder's fences, and the text outside them (fence tags kept)."""
    inside, outside, pos = [], [], 0
    for m in re.finditer(r'(<data name="[A-Za-z][A-Za-z0-9_-]{0,40}">\n)(.*?)(\n</data>)', text, re.DOTALL):
        outside.append(text[pos : m.start(2)])
        inside.append(m.group(2))
        pos = m.end(2)
    outside.append(text[pos:])
    return inside, "".join(outside)


def hidden_chars(text: str) -> list[str]:
    return sorted({f"U+{ord(c):04X}" for c in text if c not in "\n\t" and unicodedata.category(c) in _HIDDEN})


def test_every_module_that_fences_data_registers_its_builders() -> None:
    """A module that imports fence/fence_json builds prompts from data: it must have a builder named
    ``<module>.<what>`` in the registry (so models/memory.py needs ``memory.*`` entries, for example)."""
    root = Path(__file__).resolve().parents[2]
    imports = re.compile(r"from tgms\.models\.prompting import (\([^)]*\)|[^\n]*)")
    skip = {"prompting", "prompt_builders"}
    fencing = []
    for path in sorted([*(root / "models").rglob("*.py"), *(root / "pipeline").rglob("*.py")]):
        names = " ".join(m.group(1) for m in imports.finditer(path.read_text(encoding="utf-8")))
        if path.stem not in skip and re.search(r"\bfence(_json)?\b", names):
            fencing.append(path.stem)
    expected = {"plan_prompt", "reporter", "answerer", "vector_rag", "static_graph_rag", "text_to_cypher"}
    assert expected <= set(fencing)
    missing = [m for m in fencing if not any(n.startswith(m + ".") for n in BUILDERS)]
    assert missing == [], f"register a PromptBuilder for {missing} (docs/security.md §5)"
    assert any(n.startswith("tgms.") for n in BUILDERS)  # the card the tgms system builds


@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_the_benign_string_reaches_a_fence(name: str) -> None:
    texts = [c for role, c in benign(name) if role != "assistant"]
    assert any(BENIGN in part for t in texts for part in fenced_and_outside(t)[0])
    assert all(BENIGN not in fenced_and_outside(t)[1] for t in texts)
    assert find_injection({"messages": [{"role": r, "content": c} for r, c in benign(name)]}) is None


@pytest.mark.parametrize("fixture", sorted(FIXTURES))
@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_no_fixture_escapes_its_fence(name: str, fixture: str) -> None:
    builder: PromptBuilder = BUILDERS[name]
    messages: list[dict[str, Any]] = builder.messages(FIXTURES[fixture])
    clean = benign(name)
    assert [m["role"] for m in messages] == [r for r, _ in clean]
    fenced_all: list[str] = []
    for m, (role, ref) in zip(messages, clean, strict=True):
        text = m["content"]
        text.encode("utf-8")  # a lone surrogate would fail here (and in the HTTP client)
        if role == "assistant":  # the model's own earlier reply, never built from data
            continue
        tags = strict_tags(text)
        assert tags == strict_tags(ref), "the data opened or closed a fence"
        assert all(t.startswith("<data") for t in tags[::2]) and all(t == "</data>" for t in tags[1::2])
        assert sorted(_LENIENT.findall(html.unescape(text))) == sorted(_LENIENT.findall(html.unescape(ref)))
        fenced, outside = fenced_and_outside(text)
        assert outside == fenced_and_outside(ref)[1], "the fixture changed the prompt outside its fences"
        assert hidden_chars(text) == []
        fenced_all += fenced
    assert sum(len(m["content"]) for m in messages) <= builder.max_chars
    assert find_injection({"messages": messages}) is None
    if fixture in MARKERS:
        assert any(MARKERS[fixture] in html.unescape(f) for f in fenced_all), "the fixture never got in"


def test_the_boundary_is_documented() -> None:
    doc = (Path(__file__).resolve().parents[2] / "docs" / "security.md").read_text(encoding="utf-8")
    for needle in ("fence_json", "clean(", "PromptBuilder", "tests/redteam", "gullible", "\\u0064"):
        assert needle in doc, needle
