"""The reproduction: train a tiny VAR on digits and faces, then prune its generation."""

# CPU seconds of `reproduce` per scale, one thread: the figure the heartbeat's ETA and ``--help``
# use; tiny and small are the committed runs' (results/<scale>.json: tokenizers and VARs cached;
# tiny includes the fused kernel's one-time build, small the training of its two evaluators)
ESTIMATE_S = {"micro": 25.0, "tiny": 56.0, "small": 140.0}
