"""``engine.api``'s docstring table is the engine's front door: every exported name is in it and every
name it lists is exported (a name a caller finds only by reading the imports is not documented), and
each one resolves. The surface holds only what outside code uses: every exported name is imported by
``models/``, ``pipeline/`` or ``reports/`` (tests may reach the engine's own modules directly, so they do
not keep a name alive)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import tgms.engine.api as api

ROOT = Path(__file__).resolve().parents[2]
OUTSIDE = ("models", "pipeline", "reports")
LISTED = set(re.findall(r":(?:func|data|class):`(\w+)`", api.__doc__ or ""))


def _imported_from_api(tree: ast.AST) -> set[str]:
    """Names a module takes from ``engine.api`` (``from engine.api import x`` or ``api.x`` after an
    ``import engine.api as api``)."""
    names: set[str] = set()
    aliases: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "tgms.engine.api":
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module == "tgms.engine":
            aliases.update(a.asname or a.name for a in node.names if a.name == "api")
        elif isinstance(node, ast.Import):
            aliases.update(a.asname for a in node.names if a.name == "tgms.engine.api" and a.asname)
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases:
            names.add(node.attr)
    return names


def outside_uses() -> set[str]:
    used: set[str] = set()
    for top in OUTSIDE:
        for path in sorted((ROOT / top).rglob("*.py")):
            used |= _imported_from_api(ast.parse(path.read_text(encoding="utf-8"), filename=str(path)))
    return used


def test_every_export_is_in_the_table_and_every_listed_name_is_exported() -> None:
    exported = set(api.__all__)
    assert len(exported) == len(api.__all__), "a name exported twice"
    assert sorted(exported - LISTED) == [], "exported but not in the docstring's table"
    assert sorted(LISTED - exported) == [], "in the docstring's table but not exported"
    assert all(hasattr(api, name) for name in api.__all__)


def test_the_table_is_not_empty() -> None:
    # the regex above must still read the table: an empty parse would make the first test vacuous
    assert len(LISTED) > 50
    assert {"build_store", "Store", "call", "write_atomic", "TGMSError"} <= LISTED


def test_every_export_has_a_user_outside_the_engine() -> None:
    used = outside_uses()
    assert sorted(set(api.__all__) - used) == [], "exported, no outside user"
    assert sorted(used - set(api.__all__)) == [], "imported from engine.api but not exported"


def test_the_use_scan_sees_both_import_forms() -> None:
    source = "\n".join(
        [
            "from tgms.engine.api import Store",
            "import tgms.engine.api as e",
            "from tgms.engine import api as a",
            "e.call",
            "a.digest",
        ]
    )
    tree = ast.parse(source)
    assert _imported_from_api(tree) == {"Store", "call", "digest"}
