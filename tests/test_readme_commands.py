"""The README's first two commands stay true: the main job's install names every extra its embedded
defaults need, and both run commands exist."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _first_commands() -> list[str]:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    block = re.search(r"```bash\n(.*?)```", text, re.S)
    assert block, "the README opens with a bash block"
    return [line for line in block.group(1).splitlines() if line.strip()][:2]


def _extras(command: str) -> set[str]:
    m = re.search(r'pip install -c constraints\.txt -e "\.\[([a-z,]+)\]"', command)
    assert m, f"an editable install with extras: {command}"
    return set(m.group(1).split(","))


def test_main_job_installs_what_its_defaults_use() -> None:
    main, tests = _first_commands()
    assert main.rstrip().endswith("# main job") and tests.rstrip().endswith("# tests")
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    scripts = pyproject["project"]["scripts"]
    run = main.split("&&")[-1].split("#")[0].strip()
    assert run in scripts, f"the main job's command {run!r} is a console script"
    # conf/config.yaml defaults: a llama.cpp model served on the CPU (`local`), vector_rag (embeddings:
    # `rag`), text_to_cypher and the replay check (Kuzu: `kuzu`), Hydra/Ray/MLflow (`campaign`)
    defaults = (REPO / "conf" / "config.yaml").read_text(encoding="utf-8")
    model = re.search(r"^  - model: (\S+)$", defaults, re.M)
    assert model and "vector_rag" in defaults and "text_to_cypher" in defaults
    entry = (REPO / "conf" / "model" / f"{model.group(1)}.yaml").read_text(encoding="utf-8")
    assert re.search(r"^kind: local$", entry, re.M), "the main job serves its model itself"
    # its weights need no step beside the command: shipped (SmolLM2) or fetched on first use
    assert "model_file:" not in entry or re.search(r"^  fetch: true", entry, re.M)
    assert {"campaign", "kuzu", "local", "rag"} <= _extras(main)
    assert set(_extras(main)) <= set(pyproject["project"]["optional-dependencies"])
    # llama-cpp-python must not be built natively on these VMs (AMX faults; ../shared/NOTES-ENV.md)
    assert re.search(r'CMAKE_ARGS="[^"]*-DGGML_NATIVE=OFF[^"]*"', main)


def test_test_command_is_what_ci_runs() -> None:
    _, tests = _first_commands()
    assert "dev" in _extras(tests)
    run = tests.split("&&")[-1].split("#")[0].strip()
    assert run in (REPO / ".ci" / "run").read_text(encoding="utf-8")


def test_machine_pins_live_in_the_constraints_file() -> None:
    """pyproject.toml states ranges; the pins of this kind of machine (the CPU torch on its disk, the
    mirror's raphtory) are in constraints.txt, which both README commands and CI install with."""
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    reqs = [r for extra in pyproject["project"]["optional-dependencies"].values() for r in extra]
    reqs += pyproject["project"]["dependencies"]
    assert [r for r in reqs if "==" in r] == []
    pins = (REPO / "constraints.txt").read_text(encoding="utf-8")
    assert re.search(r"^torch==\S+$", pins, re.M) and re.search(r"^raphtory==\S+$", pins, re.M)
    assert all("-c constraints.txt" in c for c in _first_commands())
    assert "-c constraints.txt" in (REPO / ".ci" / "run").read_text(encoding="utf-8")
