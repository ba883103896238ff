"""The reproduction: train a tiny VAR on digits and faces, then prune its generation."""

# CPU seconds of `reproduce` per scale, one thread: the figure the heartbeat's ETA and ``--help``
# use; tiny and small are the committed runs' (results/<scale>.json: tiny with its models cached,
# the fused kernel's one-time build included; small from an empty model cache)
ESTIMATE_S = {"micro": 25.0, "tiny": 56.0, "small": 1342.0}
