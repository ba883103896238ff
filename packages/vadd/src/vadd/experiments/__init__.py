"""Experiments of ``vadd reproduce``: one module per reproduced finding."""
