"""Reproduced findings: MUTAG under two protocols (`mutag`), FreeSolv (`molecules`), and
`reproduce` (both, one report, `SCALES`)."""
