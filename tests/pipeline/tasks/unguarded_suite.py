"""A script without an ``if __name__ == "__main__"`` guard that generates a suite with two cross-check
workers, run as its own process by ``test_speculative_checks.py``. Each spawned worker re-runs this file
while it starts and dies there (a process being bootstrapped may not start processes): the build must
end anyway, in line, and print the suite's SHA-256.

Usage: python unguarded_suite.py STORE_DIR
"""

import hashlib
import sys

from tgms.engine.operators.context import OpContext
from tgms.engine.store import Store
from tgms.pipeline.tasks.crosscheck import oracle_store_for
from tgms.pipeline.tasks.generate import generate_suite, suite_text

with Store.open(sys.argv[1], read_only=True) as store:
    ostore = oracle_store_for(store)
    suite = generate_suite(OpContext(store), "synthetic", 1, store_digest="x", ostore=ostore, workers=2)
print(hashlib.sha256(suite_text(suite).encode()).hexdigest())
