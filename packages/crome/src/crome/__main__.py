"""``python -m crome`` (what ``torchrun ... -m crome train`` runs): the console script."""

from crome.cli import main

raise SystemExit(main())
