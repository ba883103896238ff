"""``python -m context_denoising`` (and ``torchrun -m context_denoising train ...``): the console
script."""

from context_denoising.cli import main

raise SystemExit(main())
