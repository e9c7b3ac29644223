import sys

from tgms.pipeline.cli.main import main

sys.exit(main())
