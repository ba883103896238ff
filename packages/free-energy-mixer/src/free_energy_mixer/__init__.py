"""Free Energy Mixer."""
