"""The reproduced findings: forced PDEs (`physics`) and moving digits (`digits`), run by `reproduce`."""
