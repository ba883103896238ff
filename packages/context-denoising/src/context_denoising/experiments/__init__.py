"""The reproduced findings (`retrieval`, `smollm`) and their CPU cost per scale."""

# CPU seconds of `context-denoising reproduce --scale S --threads 1`: the committed runs
# (results/<scale>.json; tiny and small are tested against them), the heartbeat's ETA and
# --help's figures
ESTIMATE_S = {"micro": 20.0, "tiny": 275.0, "small": 1656.0}
