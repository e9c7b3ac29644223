"""``engine.api``'s docstring table is the engine's front door: every exported name is in it and every
name it lists is exported (a name a caller finds only by reading the imports is not documented), and
each one resolves."""

from __future__ import annotations

import re

import engine.api as api

LISTED = set(re.findall(r":(?:func|data|class):`(\w+)`", api.__doc__ or ""))


def test_every_export_is_in_the_table_and_every_listed_name_is_exported() -> None:
    exported = set(api.__all__)
    assert len(exported) == len(api.__all__), "a name exported twice"
    assert sorted(exported - LISTED) == [], "exported but not in the docstring's table"
    assert sorted(LISTED - exported) == [], "in the docstring's table but not exported"
    assert all(hasattr(api, name) for name in api.__all__)
