"""Trained-model folders: weights + config.json + provenance.json + a README.md model card.

One way for every package to save and load a trained model, local and offline:

- a torch model inherits :class:`Pretrained` (``huggingface_hub``'s ``PyTorchModelHubMixin``)
  and takes its package's config dataclass as its one ``__init__`` argument ``config``;
  ``model.save_pretrained(dir, metrics=, command=, data=)`` and ``Cls.from_pretrained(dir)``;
- a Flax/jax model: :func:`save_flax` / :func:`load_flax` (``safetensors.flax``) beside the
  same config.json, provenance.json and model card;
- anything else (a transformers backbone, a tokenizer): :func:`save_folder` /
  :func:`load_folder` around the package's own writer, for the same provenance, model card,
  checks and atomic write.

Folder layout::

    config.json        the config dataclass (nested dataclasses, tuples, lists, dicts, Path)
    model.safetensors  the weights (torch state dict, or flat "a.b.c" Flax params)
    provenance.json    package + version, class, command, data (path + SHA-256), time, metrics,
                       and the SHA-256 of every file above
    README.md          model card: package, version, command, data table, metrics table

The folder is written into a temporary sibling and renamed into place, so a crash never
leaves a half folder at the target. Loading checks, in this order: the folder, config.json
and provenance.json exist (FileNotFoundError); the folder was written by the same package and
class (ValueError); its package version is not a newer major version (0.x: minor) than the
installed one (ValueError); every recorded file is present and has its recorded size and
SHA-256 (truncated or corrupt: ValueError); config.json matches the config dataclass
(ValueError). Every message names the folder.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import shlex
import shutil
import sys
import tempfile
import types
import typing
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from functools import lru_cache
from importlib import metadata
from pathlib import Path
from typing import Any, ClassVar, Self, TypeVar, cast

from shared_core.data import require_extra

require_extra(
    "shared-core", "torch", "huggingface_hub", "shared_core.hub", error=ModuleNotFoundError
)

from huggingface_hub import ModelCard, ModelCardData, PyTorchModelHubMixin  # noqa: E402

__all__ = [
    "CONFIG",
    "PROVENANCE",
    "WEIGHTS",
    "Pretrained",
    "config_from_json",
    "config_to_json",
    "file_sha256",
    "load_flax",
    "load_folder",
    "save_flax",
    "save_folder",
]

CONFIG = "config.json"
WEIGHTS = "model.safetensors"
PROVENANCE = "provenance.json"
_CARD = "README.md"
_FORMAT = "shared-core-checkpoint/1"

_C = TypeVar("_C")

_Command = str | Sequence[str] | None
_DataFiles = Sequence[str | os.PathLike[str]] | None
_Metrics = Mapping[str, float | int | str] | None


# ---------------------------------------------------------------------------------------------
# hashes and provenance


def file_sha256(path: str | os.PathLike[str]) -> str:
    """Hex SHA-256 of a file; of a folder, of its sorted ``relative/path\\0sha256\\n`` lines.

    A folder (an image folder, a sharded data set) hashes every file under it, so renaming,
    adding or changing any file changes the hash.
    """
    p = Path(path)
    if p.is_dir():
        h = hashlib.sha256()
        for f in sorted(q for q in p.rglob("*") if q.is_file()):
            h.update(f"{f.relative_to(p).as_posix()}\0{file_sha256(f)}\n".encode())
        return h.hexdigest()
    if not p.is_file():
        raise FileNotFoundError(f"path: no file or folder at {p}")
    h = hashlib.sha256()
    with open(p, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


@lru_cache(maxsize=1)
def _module_distributions() -> Mapping[str, list[str]]:
    return metadata.packages_distributions()


def _distribution(owner: type, given: str | None) -> str:
    """The installed distribution that defines `owner` (``given`` wins).

    The distribution whose files hold `owner`'s top-level module, else (editable installs
    record no files) the distribution named like that module (``shared_core`` ->
    ``shared-core``).
    """
    if given is not None:
        return given
    top = owner.__module__.split(".")[0]
    dists = _module_distributions().get(top, [])
    if len(dists) == 1:
        return dists[0]
    try:
        name: str = metadata.distribution(top).metadata["Name"]
    except metadata.PackageNotFoundError:
        raise ValueError(
            f"{owner.__qualname__}: cannot tell which installed package module {top!r} belongs "
            "to; set distribution = '<package name>' on the class or pass distribution="
        ) from None
    return name


def _installed_version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        raise ValueError(f"distribution: package {dist!r} is not installed") from None


def _command(command: _Command) -> list[str]:
    if command is None:
        return [Path(sys.argv[0]).name, *sys.argv[1:]] if sys.argv and sys.argv[0] else []
    if isinstance(command, str):
        return shlex.split(command)
    if not all(isinstance(c, str) for c in command):
        raise TypeError(f"command: expected a string or a sequence of strings, got {command!r}")
    return list(command)


def _data(data: _DataFiles) -> list[dict[str, Any]]:
    if data is None:
        return []
    if isinstance(data, (str, os.PathLike)):
        data = [data]
    out = []
    for d in data:
        p = Path(d)
        if not p.exists():
            raise FileNotFoundError(f"data: no file or folder at {p}")
        size = sum(f.stat().st_size for f in p.rglob("*") if f.is_file()) if p.is_dir() else None
        out.append(
            {
                "path": str(d),
                "sha256": file_sha256(p),
                "bytes": p.stat().st_size if size is None else size,
            }
        )
    return out


def _metrics(metrics: _Metrics) -> dict[str, float | int | str]:
    if metrics is None:
        return {}
    if not isinstance(metrics, Mapping):
        raise TypeError(f"metrics: expected a mapping name -> number, got {type(metrics).__name__}")
    out: dict[str, float | int | str] = {}
    for k, v in metrics.items():
        if not isinstance(k, str) or not isinstance(v, (int, float, str)) or isinstance(v, bool):
            raise TypeError(f"metrics[{k!r}]: expected a number or a string, got {v!r}")
        out[k] = v
    return out


def _provenance(
    owner: type,
    distribution: str | None,
    *,
    metrics: _Metrics,
    command: _Command,
    data: _DataFiles,
) -> dict[str, Any]:
    dist = _distribution(owner, distribution)
    return {
        "format": _FORMAT,
        "package": dist,
        "version": _installed_version(dist),
        "class": f"{owner.__module__}.{owner.__qualname__}",
        "command": _command(command),
        "data": _data(data),
        "metrics": _metrics(metrics),
        "created": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "shared_core": _installed_version("shared-core"),
    }


# ---------------------------------------------------------------------------------------------
# model card


def _cell(v: object) -> str:
    s = f"{v:.6g}" if isinstance(v, float) else str(v)
    return s.replace("|", "\\|")


def _model_card(provenance: Mapping[str, Any]) -> ModelCard:
    """The README.md model card of a folder: package, version, command, data, metrics."""
    dist, version, klass = provenance["package"], provenance["version"], provenance["class"]
    card_data = ModelCardData(library_name=dist, tags=["shared-core", dist])
    command = shlex.join(provenance["command"]) if provenance["command"] else "(not recorded)"
    lines = [
        f"# {klass.rsplit('.', 1)[-1]} ({dist} {version})",
        "",
        f"Trained with `{dist}` {version} (class `{klass}`), saved {provenance['created']} "
        f"by shared-core {provenance['shared_core']}.",
        "",
        "## _Command",
        "",
        "```bash",
        command,
        "```",
        "",
        "## Data",
        "",
    ]
    if provenance["data"]:
        lines += ["| file | SHA-256 | bytes |", "|---|---|---:|"]
        lines += [
            f"| `{_cell(d['path'])}` | `{d['sha256']}` | {d['bytes']} |" for d in provenance["data"]
        ]
    else:
        lines.append("(no data files recorded)")
    lines += ["", "## _Metrics", ""]
    if provenance["metrics"]:
        lines += ["| metric | value |", "|---|---:|"]
        lines += [f"| {_cell(k)} | {_cell(v)} |" for k, v in provenance["metrics"].items()]
    else:
        lines.append("(no metrics recorded)")
    lines += [
        "",
        "## Files",
        "",
        f"`{CONFIG}` (config), `{PROVENANCE}` (package, command, data and file hashes), "
        "the weights, and this card. Load it offline with the package's `from_pretrained` "
        "(or `shared_core.hub.load_flax`).",
        "",
    ]
    return ModelCard(f"---\n{card_data.to_yaml()}\n---\n\n" + "\n".join(lines))


# ---------------------------------------------------------------------------------------------
# config <-> JSON


def config_to_json(config: Any, where: str = "config") -> Any:
    """A JSON value for a config dataclass: nested dataclasses, tuples/lists, str-keyed dicts,
    ``Path`` and str/int/float/bool/None. Anything else is a TypeError naming the field."""
    if dataclasses.is_dataclass(config) and not isinstance(config, type):
        return {
            f.name: config_to_json(getattr(config, f.name), f"{where}.{f.name}")
            for f in dataclasses.fields(config)
            if f.init
        }
    if isinstance(config, (tuple, list)):
        return [config_to_json(v, f"{where}[{i}]") for i, v in enumerate(config)]
    if isinstance(config, Mapping):
        if not all(isinstance(k, str) for k in config):
            raise TypeError(f"{where}: dict keys must be strings, got {list(config)!r}")
        return {k: config_to_json(v, f"{where}.{k}") for k, v in config.items()}
    if isinstance(config, Path):
        return str(config)
    if config is None or isinstance(config, (bool, int, float, str)):
        return config
    raise TypeError(
        f"{where}: cannot store a {type(config).__name__} in config.json; expected a "
        "dataclass, tuple, list, dict, Path, str, int, float, bool or None"
    )


def config_from_json(tp: Any, value: Any, where: str = "config") -> Any:
    """Rebuild a value of type `tp` (a config dataclass, usually) from `config_to_json`'s JSON.

    Unknown keys and missing required fields are a ValueError naming the field; a field left
    out of an older folder takes its dataclass default.
    """
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if tp is Any:
        return value
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        if not isinstance(value, dict):
            raise ValueError(f"{where}: expected an object for {tp.__name__}, got {value!r}")
        hints = typing.get_type_hints(tp)
        fields = {f.name: f for f in dataclasses.fields(tp) if f.init}
        unknown = sorted(set(value) - set(fields))
        if unknown:
            raise ValueError(f"{where}: unknown field(s) {unknown} for {tp.__name__}")
        kwargs = {k: config_from_json(hints[k], v, f"{where}.{k}") for k, v in value.items()}
        missing = [
            k
            for k, f in fields.items()
            if k not in kwargs
            and f.default is dataclasses.MISSING
            and f.default_factory is dataclasses.MISSING
        ]
        if missing:
            raise ValueError(f"{where}: missing field(s) {missing} for {tp.__name__}")
        return tp(**kwargs)
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        errors = []
        for a in args:
            if a is type(None):
                continue
            try:
                return config_from_json(a, value, where)
            except (TypeError, ValueError) as e:
                errors.append(str(e))
        raise ValueError(f"{where}: {value!r} matches none of {tp}: {'; '.join(errors)}")
    if origin is typing.Literal:
        if value not in args:
            raise ValueError(f"{where}: expected one of {list(args)}, got {value!r}")
        return value
    if origin in (tuple, list):
        if not isinstance(value, list):
            raise ValueError(f"{where}: expected a list, got {value!r}")
        if origin is list:
            return [
                config_from_json(args[0] if args else Any, v, f"{where}[{i}]")
                for i, v in enumerate(value)
            ]
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(config_from_json(args[0], v, f"{where}[{i}]") for i, v in enumerate(value))
        if args and len(args) != len(value):
            raise ValueError(f"{where}: expected {len(args)} items, got {len(value)}")
        return tuple(
            config_from_json(args[i] if args else Any, v, f"{where}[{i}]")
            for i, v in enumerate(value)
        )
    if origin is dict or tp is dict:
        if not isinstance(value, dict):
            raise ValueError(f"{where}: expected an object, got {value!r}")
        vt = args[1] if len(args) == 2 else Any
        return {k: config_from_json(vt, v, f"{where}.{k}") for k, v in value.items()}
    if tp is tuple or tp is list:
        if not isinstance(value, list):
            raise ValueError(f"{where}: expected a list, got {value!r}")
        return tp(value)
    if tp is Path:
        if not isinstance(value, str):
            raise ValueError(f"{where}: expected a path string, got {value!r}")
        return Path(value)
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ValueError(f"{where}: expected a number, got {value!r}")
        return float(value)
    if tp in (int, str, bool, type(None)):
        if type(value) is not tp:
            raise ValueError(f"{where}: expected {tp.__name__}, got {value!r}")
        return value
    raise ValueError(f"{where}: type {tp} is not supported in config.json")


def _check_config(config: Any) -> Any:
    """`config` as JSON, after checking that it is a dataclass that round-trips exactly."""
    if not (dataclasses.is_dataclass(config) and not isinstance(config, type)):
        raise TypeError(f"config: expected a dataclass instance, got {type(config).__name__}")
    encoded = config_to_json(config)
    if config_from_json(type(config), encoded) != config:
        raise TypeError(
            f"config: {type(config).__name__} does not round-trip through config.json; check "
            "that every field's value matches its annotation (a tuple field holding a list?)"
        )
    return encoded


# ---------------------------------------------------------------------------------------------
# atomic folder write and checked read


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


@contextmanager
def _atomic_dir(target: Path) -> Iterator[Path]:
    """Yield an empty temporary sibling of `target`; on success it replaces `target`."""
    if target.exists() and not target.is_dir():
        raise ValueError(f"directory: {target} is a file; expected a folder path")
    if target.is_dir() and any(target.iterdir()) and not (target / PROVENANCE).is_file():
        raise ValueError(
            f"directory: {target} is a non-empty folder that is not a checkpoint "
            f"(no {PROVENANCE}); refusing to replace it"
        )
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent))
    try:
        yield tmp
        os.chmod(tmp, 0o777 & ~_umask())
        for f in tmp.rglob("*"):
            if f.is_file():
                with open(f, "rb+") as fh:
                    os.fsync(fh.fileno())
        if target.exists():
            old = Path(
                tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".old", dir=target.parent)
            )
            os.replace(target, old)
            os.replace(tmp, target)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(tmp, target)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def save_folder(
    directory: str | os.PathLike[str],
    save: Callable[[Path, Mapping[str, Any]], None],
    *,
    owner: type,
    config: Any,
    metrics: _Metrics = None,
    command: _Command = None,
    data: _DataFiles = None,
    distribution: str | None = None,
    config_name: str = CONFIG,
) -> Path:
    """Write a checkpoint folder atomically; `save(tmp_dir, provenance)` writes the weights.

    `config` (a dataclass, or an already JSON-able mapping) goes to `config_name` (default
    config.json; another name where config.json is not ours, e.g. a peft adapter folder, which
    transformers reads as an adapter only without one) unless `save` wrote it; provenance.json records `owner`'s package (`distribution`, default: the
    installed package that defines `owner`), version and class, the command (default
    ``sys.argv``), the data files with their SHA-256, `metrics`, the time and the SHA-256 of
    every file written; README.md is the model card (kept if `save` wrote one).
    """
    encoded = dict(config) if isinstance(config, Mapping) else _check_config(config)
    provenance = _provenance(owner, distribution, metrics=metrics, command=command, data=data)
    target = Path(directory)
    with _atomic_dir(target) as tmp:
        save(tmp, provenance)
        if not (tmp / config_name).is_file():
            (tmp / config_name).write_text(json.dumps(encoded, indent=2, sort_keys=True) + "\n")
        files = sorted(
            f for f in tmp.rglob("*") if f.is_file() and f.name not in (PROVENANCE, _CARD)
        )
        provenance = {
            **provenance,
            "files": {
                f.relative_to(tmp).as_posix(): {"sha256": file_sha256(f), "bytes": f.stat().st_size}
                for f in files
            },
        }
        (tmp / PROVENANCE).write_text(json.dumps(provenance, indent=2) + "\n")
        if not (tmp / _CARD).is_file():
            _model_card(provenance).save(tmp / _CARD)
    return target


def _api_level(version: str) -> tuple[int, ...]:
    """Major version, or (0, minor) for 0.x: the part whose increase may break folders."""
    from packaging.version import Version

    v = Version(version)
    return (v.major, v.minor) if v.major == 0 else (v.major,)


def load_folder(
    directory: str | os.PathLike[str],
    owner: type,
    config_type: type | None = None,
    *,
    distribution: str | None = None,
    verify: bool = True,
    config_name: str = CONFIG,
) -> tuple[Any, dict[str, Any]]:
    """Check a checkpoint folder for `owner` and return ``(config, provenance.json)``.

    `config` is `config_name` (as `save_folder` wrote it; default config.json) rebuilt as `config_type` (a config dataclass; a mismatch is a
    ValueError naming the folder and the field), or the raw JSON object without one.

    FileNotFoundError: no folder, config.json, provenance.json or a recorded file. ValueError
    naming the folder: written by another package or class, by a newer major (0.x: minor)
    version of the package, or a file whose size or SHA-256 differs from provenance.json
    (truncated or corrupt). ``verify=False`` skips the SHA-256 (sizes are still checked).
    """
    p = Path(directory)
    if not p.is_dir():
        raise FileNotFoundError(f"directory: no checkpoint folder at {p}")
    for name in (config_name, PROVENANCE):
        if not (p / name).is_file():
            raise FileNotFoundError(
                f"{p}: no {name}; expected a folder written by save_pretrained/save_flax"
            )
    try:
        provenance = json.loads((p / PROVENANCE).read_text())
        config = json.loads((p / config_name).read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ValueError(f"{p}: {PROVENANCE} or {config_name} is not valid JSON ({e})") from None
    if not isinstance(provenance, dict) or provenance.get("format") != _FORMAT:
        raise ValueError(f"{p}: {PROVENANCE} is not a shared-core checkpoint record ({_FORMAT})")
    dist = _distribution(owner, distribution)
    saved_class = str(provenance.get("class", "?"))
    if provenance.get("package") != dist or saved_class.rsplit(".", 1)[-1] != owner.__qualname__:
        raise ValueError(
            f"{p}: written by package {provenance.get('package')!r} for class {saved_class}; "
            f"expected a {dist} {owner.__qualname__} checkpoint"
        )
    installed, saved = _installed_version(dist), str(provenance.get("version"))
    if _api_level(saved) > _api_level(installed):
        raise ValueError(
            f"{p}: written by {dist} {saved}, a newer major version than the installed "
            f"{installed}; upgrade {dist} to load it"
        )
    for rel, rec in provenance.get("files", {}).items():
        f = p / rel
        if not f.is_file():
            raise FileNotFoundError(f"{p}: no {rel}, which {PROVENANCE} records")
        size = f.stat().st_size
        if size != rec["bytes"]:
            raise ValueError(
                f"{p}: {rel} has {size} bytes, {PROVENANCE} records {rec['bytes']} "
                "(truncated or corrupt file); save the model again"
            )
        if verify and file_sha256(f) != rec["sha256"]:
            raise ValueError(
                f"{p}: {rel} does not match its SHA-256 in {PROVENANCE} (corrupt or edited "
                "file); save the model again"
            )
    if not isinstance(config, dict):
        raise ValueError(f"{p}: {config_name} holds {type(config).__name__}; expected an object")
    if config_type is None:
        return config, provenance
    try:
        decoded = config_from_json(config_type, config)
    except ValueError as e:
        raise ValueError(
            f"{p}: {config_name} does not match {config_type.__qualname__}: {e}"
        ) from None
    return decoded, provenance


def _config_type(owner: type) -> type:
    try:
        tp = typing.get_type_hints(cast(Any, owner).__init__).get("config")
    except NameError as e:
        raise TypeError(
            f"{owner.__qualname__}: cannot resolve the config annotation ({e})"
        ) from None
    if not (isinstance(tp, type) and dataclasses.is_dataclass(tp)):
        raise TypeError(
            f"{owner.__qualname__}: __init__ must take one argument `config` annotated with a "
            f"config dataclass, got {tp!r}"
        )
    return tp


def _weights_error(p: Path, e: Exception) -> ValueError:
    return ValueError(f"{p}: cannot load {WEIGHTS} ({type(e).__name__}: {e})")


# ---------------------------------------------------------------------------------------------
# torch


class Pretrained(PyTorchModelHubMixin):
    """Mixin for a package's ``nn.Module`` whose ``__init__`` takes one config dataclass.

    ``class Net(nn.Module, Pretrained): def __init__(self, config: NetConfig) -> None`` gets
    ``net.save_pretrained(dir, metrics=, command=, data=)`` and ``Net.from_pretrained(dir)``
    (local folders only, no hub access). Set the class attribute ``distribution`` when the
    class is not defined inside an installed package (tests, notebooks).
    """

    distribution: ClassVar[str | None] = None

    def save_pretrained(  # type: ignore[override]
        self,
        directory: str | os.PathLike[str],
        *,
        metrics: _Metrics = None,
        command: _Command = None,
        data: _DataFiles = None,
    ) -> Path:
        """Write config.json, model.safetensors, provenance.json and README.md into `directory`.

        `metrics`: name -> number for the model card; `command`: the training command line
        (default ``sys.argv``); `data`: the training files, recorded with their SHA-256.
        """
        config = self._hub_mixin_config
        _config_type(type(self))
        encoded = _check_config(config)

        def save(tmp: Path, provenance: Mapping[str, Any]) -> None:
            PyTorchModelHubMixin.save_pretrained(
                self, tmp, config=encoded, model_card_kwargs={"provenance": provenance}
            )

        return save_folder(
            directory,
            save,
            owner=type(self),
            config=encoded,
            metrics=metrics,
            command=command,
            data=data,
            distribution=self.distribution,
        )

    def generate_model_card(self, *args: Any, **kwargs: Any) -> ModelCard:
        """The shared-core model card (``provenance=`` given by `save_pretrained`)."""
        provenance = kwargs.get("provenance")
        if provenance is None:
            provenance = _provenance(
                type(self), self.distribution, metrics=None, command=None, data=None
            )
        return _model_card(provenance)

    @classmethod
    def from_pretrained(  # type: ignore[override]
        cls, directory: str | os.PathLike[str], *, map_location: str = "cpu"
    ) -> Self:
        """Load a folder written by `save_pretrained` (checked; see the module doc), in eval mode."""
        p = Path(directory)
        config, _ = load_folder(p, cls, _config_type(cls), distribution=cls.distribution)
        model: Self = super().from_pretrained(p, config=config, map_location=map_location)
        return model

    @classmethod
    def _from_pretrained(
        cls,
        *,
        model_id: str,
        revision: str | None,
        cache_dir: str | Path | None,
        force_download: bool,
        local_files_only: bool,
        token: str | bool | None,
        map_location: str = "cpu",
        strict: bool = True,
        **model_kwargs: Any,
    ) -> Self:
        """Local folders only, strict: every weight of the class must be in the file."""
        from safetensors import SafetensorError

        p = Path(model_id)
        model = cls(**model_kwargs)
        try:
            loaded: Self = cls._load_as_safetensor(model, str(p / WEIGHTS), map_location, strict)
        except (SafetensorError, RuntimeError, OSError) as e:
            raise _weights_error(p, e) from None
        return loaded


# ---------------------------------------------------------------------------------------------
# Flax / jax


def _flatten_params(tree: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in tree.items():
        if not isinstance(k, str) or "." in k or not k:
            raise ValueError(
                f"params: key {prefix + str(k)!r} must be a non-empty string without '.'"
            )
        if isinstance(v, Mapping):
            out.update(_flatten_params(v, f"{prefix}{k}."))
        else:
            out[prefix + k] = v
    return out


def _unflatten_params(flat: Mapping[str, Any]) -> dict[str, Any]:
    tree: dict[str, Any] = {}
    for key, v in flat.items():
        node = tree
        *parents, leaf = key.split(".")
        for part in parents:
            node = node.setdefault(part, {})
        node[leaf] = v
    return tree


def save_flax(
    directory: str | os.PathLike[str],
    params: Mapping[str, Any],
    config: Any,
    *,
    metrics: _Metrics = None,
    command: _Command = None,
    data: _DataFiles = None,
    distribution: str | None = None,
) -> Path:
    """Write Flax/jax `params` (a nested dict of arrays) with its config dataclass.

    Same folder as `Pretrained.save_pretrained`: model.safetensors (``safetensors.flax``,
    keys ``"a.b.c"``), config.json, provenance.json (class = the config's class) and README.md.
    """
    require_extra("shared-core", "jax", "jax", "saving a Flax model")
    from safetensors.flax import save_file

    if not isinstance(params, Mapping):
        raise TypeError(f"params: expected a nested dict of arrays, got {type(params).__name__}")
    flat = _flatten_params(params)
    if not flat:
        raise ValueError("params: expected at least one array, got an empty tree")
    encoded = _check_config(config)

    def save(tmp: Path, provenance: Mapping[str, Any]) -> None:
        save_file(flat, str(tmp / WEIGHTS), metadata={"format": "flax"})

    return save_folder(
        directory,
        save,
        owner=type(config),
        config=encoded,
        metrics=metrics,
        command=command,
        data=data,
        distribution=distribution,
    )


def load_flax(
    directory: str | os.PathLike[str], config_type: type[_C], *, distribution: str | None = None
) -> tuple[dict[str, Any], _C]:
    """``(params, config)`` from a folder written by `save_flax` with a `config_type` config."""
    require_extra("shared-core", "jax", "jax", "loading a Flax model")
    from safetensors import SafetensorError
    from safetensors.flax import load_file

    if not (isinstance(config_type, type) and dataclasses.is_dataclass(config_type)):
        raise TypeError(f"config_type: expected a config dataclass class, got {config_type!r}")
    p = Path(directory)
    config, _ = load_folder(p, config_type, config_type, distribution=distribution)
    try:
        flat = load_file(str(p / WEIGHTS))
    except (SafetensorError, OSError) as e:
        raise _weights_error(p, e) from None
    return _unflatten_params(flat), config
