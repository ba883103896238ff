"""``python -m dist2loss`` (and ``torchrun -m dist2loss train ...``): the console script."""

from dist2loss.cli import main

raise SystemExit(main())
