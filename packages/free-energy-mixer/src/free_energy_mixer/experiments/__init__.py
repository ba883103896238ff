"""The reproduced findings: per-channel selective recall (`selection`) and a char-LM (`charlm`)."""
