"""``python3 -m mass_bench`` (what ``tools/bench`` runs)."""
import sys

from mass_bench.bench import main

sys.exit(main())
