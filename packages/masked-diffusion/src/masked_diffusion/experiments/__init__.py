"""Experiments of ``masked-diffusion reproduce``: one module per reproduced finding."""
