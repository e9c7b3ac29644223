"""``python -m tgms.pipeline.bench NAME ...`` is ``tgms bench NAME ...``."""

import sys

from tgms.pipeline.cli.main import main

if __name__ == "__main__":
    sys.exit(main(["bench", *sys.argv[1:]]))
