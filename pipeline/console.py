"""What the command-line tools print: JSON results on stdout, progress on stderr (so stdout stays
parseable). Shared by ``tgms``, ``tgms bench`` and ``tgms report``."""

from __future__ import annotations

import json
import sys
from typing import Any


def print_json(value: Any) -> None:
    json.dump(value, sys.stdout, indent=2, sort_keys=True, ensure_ascii=False)
    sys.stdout.write("\n")


def progress(msg: str) -> None:
    """Progress for long work goes to stderr so stdout stays parseable."""
    print(msg, file=sys.stderr, flush=True)
