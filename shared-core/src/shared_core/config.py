"""A package's config dataclass, overridden from a file and from ``key=value`` pairs.

Every verb takes ``--config FILE`` (JSON or TOML: a table of field names, nested tables for
nested dataclasses) and ``--set key=value`` (repeatable; ``model.width=64`` reaches a nested
dataclass). Values are converted to the field's annotated type: ``int``, ``float``, ``bool``
(true/false/1/0/yes/no), ``str``, ``Path``, a ``Literal``, ``X | None`` (``none``/``null``),
``tuple``/``list`` (comma-separated, or a JSON list), anything else parsed as JSON. A key the
dataclass does not have, or a value of the wrong type, is a `UsageError` naming the key, the
value and what was expected. The result is a new frozen-or-not instance (`dataclasses.replace`),
so the package's own ``__post_init__`` checks run on it.
"""

from __future__ import annotations

import dataclasses
import json
import tomllib
import types
import typing
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from shared_core.cli import UsageError


def _read_config_file(path: str | Path) -> dict[str, Any]:
    """The table of a ``.json`` or ``.toml`` config file (a mapping at the top)."""
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"--config: no file {p}")
    try:
        if p.suffix.lower() == ".toml":
            table: Any = tomllib.loads(p.read_text(encoding="utf-8"))
        elif p.suffix.lower() == ".json":
            table = json.loads(p.read_text(encoding="utf-8"))
        else:
            raise UsageError(f"--config: expected a .json or .toml file, got {p}")
    except (json.JSONDecodeError, tomllib.TOMLDecodeError) as e:
        raise UsageError(f"--config: {p} is not valid {p.suffix[1:].upper()}: {e}") from None
    if not isinstance(table, dict):
        raise UsageError(f"--config: {p} must hold a table of settings, got {type(table).__name__}")
    return table


def _parse_sets(pairs: Sequence[str]) -> dict[str, str]:
    """``["a=1", "m.w=2"]`` -> ``{"a": "1", "m.w": "2"}`` (a pair without ``=`` is an error)."""
    out: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"--set: expected key=value, got {pair!r}")
        out[key.strip()] = value.strip()
    return out


def apply_overrides(config: Any, file: str | Path | None = None, sets: Sequence[str] = ()) -> Any:
    """`config` with the values of `file` applied, then the ``--set`` pairs (later wins)."""
    if not dataclasses.is_dataclass(config) or isinstance(config, type):
        raise TypeError(f"config: expected a dataclass instance, got {type(config).__name__}")
    if file is not None:
        config = _apply(config, _read_config_file(file), f"--config {file}: ")
    nested: dict[str, Any] = {}
    for key, value in _parse_sets(sets).items():
        node = nested
        *parents, leaf = key.split(".")
        for part in parents:
            node = node.setdefault(part, {})
            if not isinstance(node, dict):
                raise UsageError(f"--set {key}: {part} is set to a value and used as a table")
        node[leaf] = value
    return _apply(config, nested, "--set ", text=True)


def _apply(config: Any, table: Mapping[str, Any], where: str, text: bool = False) -> Any:
    hints = typing.get_type_hints(type(config))
    fields = {f.name: f for f in dataclasses.fields(config) if f.init}
    changes: dict[str, Any] = {}
    for key, value in table.items():
        if key not in fields:
            raise UsageError(
                f"{where}{key}: {type(config).__name__} has no setting {key!r}; "
                f"expected one of {sorted(fields)}"
            )
        current = getattr(config, key)
        if dataclasses.is_dataclass(current) and not isinstance(current, type):
            if not isinstance(value, Mapping):
                raise UsageError(
                    f"{where}{key}: expected a table of {type(current).__name__} settings"
                )
            changes[key] = _apply(current, value, f"{where}{key}.", text)
        else:
            changes[key] = _convert(value, hints.get(key, Any), f"{where}{key}", text)
    try:
        return dataclasses.replace(config, **changes)
    except (ValueError, TypeError) as e:
        raise UsageError(f"{where.strip()}: {e}") from None


_TRUE, _FALSE = {"true", "1", "yes", "on"}, {"false", "0", "no", "off"}


def _convert(value: Any, annotation: Any, key: str, text: bool = True) -> Any:
    """`value` (a ``--set`` string when `text`, else a JSON/TOML value) as `annotation`."""
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if annotation is Any:
        return _json(value) if text else value
    if origin in (typing.Union, types.UnionType):
        if type(None) in args and (value is None or (text and value.lower() in ("none", "null"))):
            return None
        for arg in (a for a in args if a is not type(None)):
            try:
                return _convert(value, arg, key, text)
            except UsageError:
                continue
        raise UsageError(f"{key}: {value!r} is none of {annotation}")
    if origin is typing.Literal:
        for choice in args:
            try:
                if _convert(value, type(choice), key, text) == choice:
                    return choice
            except UsageError:
                continue
        raise UsageError(f"{key}: expected one of {list(args)}, got {value!r}")
    if origin in (tuple, list) or annotation in (tuple, list):
        items = _items(value, key) if text else value
        if not isinstance(items, (list, tuple)):
            raise UsageError(f"{key}: expected a list, got {value!r}")
        item_type = args[0] if args and (len(args) == 1 or args[-1] is Ellipsis) else Any
        converted = [
            _convert(v, args[i] if args and item_type is Any and i < len(args) else item_type,
                    key, text and isinstance(v, str))
            for i, v in enumerate(items)
        ]  # fmt: skip
        return list(converted) if (origin or annotation) is list else tuple(converted)
    if annotation is bool:
        if isinstance(value, bool):
            return value
        if text and value.lower() in _TRUE | _FALSE:
            return value.lower() in _TRUE
        raise UsageError(f"{key}: expected true or false, got {value!r}")
    if annotation in (int, float):
        if isinstance(value, bool) or (not text and not isinstance(value, (int, float))):
            raise UsageError(f"{key}: expected {annotation.__name__}, got {value!r}")
        try:
            number = annotation(value) if text else value
        except ValueError:
            raise UsageError(f"{key}: expected {annotation.__name__}, got {value!r}") from None
        if annotation is int and not float(number).is_integer():
            raise UsageError(f"{key}: expected int, got {value!r}")
        return annotation(number)
    if annotation is str:
        if not isinstance(value, str):
            raise UsageError(f"{key}: expected a string, got {value!r}")
        return value
    if annotation is Path:
        return Path(value)
    return _json(value) if text else value


def _items(value: str, key: str) -> list[Any]:
    if value.startswith("["):
        parsed = _json(value)
        if not isinstance(parsed, list):
            raise UsageError(f"{key}: expected a list, got {value!r}")
        return parsed
    return [v.strip() for v in value.split(",") if v.strip()]


def _json(value: str) -> Any:
    try:
        return json.loads(value)
    except json.JSONDecodeError:
        return value
