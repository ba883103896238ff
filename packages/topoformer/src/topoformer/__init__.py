"""TopoFormer."""
