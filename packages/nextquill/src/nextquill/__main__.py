"""``python -m nextquill`` (and ``torchrun -m nextquill train ...``): the console script."""

from nextquill.cli import main

raise SystemExit(main())
