"""The reproduction: train a tiny VAR on digits and faces, then prune its generation."""
