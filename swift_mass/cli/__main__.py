import sys

from swift_mass.cli.main import main

sys.exit(main())
