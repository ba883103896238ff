"""The reproduction: train a tiny VAR on digits and faces, then prune its generation."""

# CPU seconds of `reproduce` per scale from an empty model cache, one thread: the figure the
# heartbeat's ETA and ``--help`` use; tiny and small are the committed runs' (results/*.json)
ESTIMATE_S = {"micro": 25.0, "tiny": 120.0, "small": 1342.0}
