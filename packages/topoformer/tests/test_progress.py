"""Progress lines: phases always, other lines at most every EVERY_S seconds."""

from __future__ import annotations

from topoformer import progress


def test_beat_throttles_lines_but_always_prints_phases(capsys, monkeypatch):
    monkeypatch.setattr(progress, "EVERY_S", 3600.0)
    monkeypatch.setattr(progress, "_last", float("-inf"))
    progress.beat("first")  # nothing printed for an hour before: prints
    progress.beat("second")  # within the hour: silent
    progress.beat("fold 2/10", phase=True)  # a phase: prints
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 2
    assert lines[0].startswith("[topoformer ") and lines[0].endswith("] first")
    assert "s CPU] fold 2/10" in lines[1]
    monkeypatch.setattr(progress, "EVERY_S", 0.0)
    progress.beat("third")
    assert capsys.readouterr().err.endswith("] third\n")
