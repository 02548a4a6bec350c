"""Settings declared once: each config field names its ``RETRIEVAL_*`` variable and its help.

A field made by :func:`setting` carries its environment variable (``<SOURCE>`` in the name of a
per-source one) and one line of help in its metadata. From that declaration alone,
:func:`from_env` reads a config class from the environment (parsing each value by the field's
declared type), :func:`variables` lists every variable for the CLI's help, and
:func:`configuration_markdown` writes ``docs/configuration.md``.

The environment is read in one place, ``from_env``: by the CLI, and by each entry point given
no config (``connect()``, the stores, the retrievers), so that a program and the CLI on the same
machine see the same settings. A config given by the caller is used as it is.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import logging
import os
import types
import typing
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, TypeVar

from retrieval.errors import ConfigurationError, mask_url

ENV = "env"
HELP = "help"
PARSE = "parse"
DEFAULT_TEXT = "default_text"
WITHIN = "within"
SOURCE = "<SOURCE>"

# Variables that programs beside the library read (its tests, its benchmarks), declared by them
# with read_elsewhere(): known, so that setting one draws no warning.
_READ_ELSEWHERE: dict[str, str] = {}

_NONE_WORDS = frozenset({"none", "off"})
_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off"})

Config = TypeVar("Config")
_CONFIGS: list[type[Any]] = []
_warned: set[str] = set()
logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Within:
    """The values a number setting takes: from ``low`` to ``high`` (``None``: no bound), each
    end included unless ``open_low`` / ``open_high``; ``integer``: whole numbers only (never a
    bool)."""

    low: float | None = None
    high: float | None = None
    integer: bool = False
    open_low: bool = False
    open_high: bool = False

    def problem(self, name: str, value: object, *, optional: bool = False) -> str | None:
        """What is wrong with ``value`` as ``name`` (``None`` allowed when ``optional``);
        None when it is within."""
        if value is None and optional:
            return None
        kind = int if self.integer else int | float
        if isinstance(value, bool) or not isinstance(value, kind) or not self._holds(value):
            alternative = " or None" if optional else ""
            return f"{name} must be {self.described()}{alternative}, got {value!r}"
        return None

    def described(self) -> str:
        """The values in words: ``a number in [0, 1]``, ``an integer >= 1``, ..."""
        kind = "an integer" if self.integer else "a number"
        low, high = _bound_text(self.low), _bound_text(self.high)
        if self.high is None:
            return f"{kind} {'>' if self.open_low else '>='} {low}"
        if self.low is None:
            return f"{kind} {'<' if self.open_high else '<='} {high}"
        if self.integer:
            return f"{kind} from {low} to {high}"
        left, right = "(" if self.open_low else "[", ")" if self.open_high else "]"
        return f"{kind} in {left}{low}, {high}{right}"

    def _holds(self, value: float) -> bool:
        if self.low is not None and not (value > self.low if self.open_low else value >= self.low):
            return False
        return self.high is None or (value < self.high if self.open_high else value <= self.high)


# The share-like settings: weights, thresholds, shares.
UNIT = Within(0.0, 1.0)


def _bound_text(bound: float | None) -> str:
    if bound is None:
        return ""
    return str(int(bound)) if float(bound).is_integer() else str(bound)


def setting(
    default: Any = dataclasses.MISSING,
    *,
    env: str,
    help: str,
    default_factory: Callable[[], Any] | Any = dataclasses.MISSING,
    parse: Callable[[str], Any] | None = None,
    default_text: str | None = None,
    within: Within | None = None,
) -> Any:
    """A dataclass field read from ``env``; ``help`` is its one line in the CLI and the docs.

    ``parse`` turns the variable's text into the value (default: by the field's type);
    ``default_text`` describes a default that is not a plain value (a per-user directory);
    ``within`` bounds a number, checked by :func:`check_ranges` when the config is made."""
    metadata: dict[str, Any] = {ENV: env, HELP: help}
    if parse is not None:
        metadata[PARSE] = parse
    if default_text is not None:
        metadata[DEFAULT_TEXT] = default_text
    if within is not None:
        metadata[WITHIN] = within
    return field(default=default, default_factory=default_factory, metadata=metadata)


def check_ranges(config: Any) -> None:
    """A :class:`ConfigurationError` naming the first field of ``config`` outside the range its
    :func:`setting` declares (a field typed ``X | None`` may also be None)."""
    for name, within, optional in _ranges(type(config)):
        problem = within.problem(name, getattr(config, name), optional=optional)
        if problem is not None:
            raise ConfigurationError(problem)


_RANGES: dict[type[Any], tuple[tuple[str, Within, bool], ...]] = {}


def _ranges(cls: type[Any]) -> tuple[tuple[str, Within, bool], ...]:
    """The declared ranges of ``cls``'s fields, read once per class."""
    found = _RANGES.get(cls)
    if found is None:
        hints = typing.get_type_hints(cls)
        found = _RANGES[cls] = tuple(
            (item.name, item.metadata[WITHIN], _is_optional(hints[item.name]))
            for item in fields(cls)
            if WITHIN in item.metadata
        )
    return found


def _is_optional(kind: Any) -> bool:
    return typing.get_origin(kind) in (typing.Union, types.UnionType) and type(None) in (
        typing.get_args(kind)
    )


def configurable(cls: type[Config]) -> type[Config]:
    """Register a config class whose fields are :func:`setting` s (for the variables' list)."""
    _CONFIGS.append(cls)
    return cls


def from_env(
    cls: type[Config],
    environ: Mapping[str, str] | None = None,
    *,
    source: str | None = None,
    base: Config | None = None,
) -> Config:
    """``cls`` with each field whose variable is set (and not empty) read from ``environ``
    (default: ``os.environ``); the rest keep their defaults (or ``base``'s). A config nested
    by source (``RetrievalConfig.semantic``) reads ``RETRIEVAL_SEMANTIC_*``. An error names
    the variable and its value."""
    env = os.environ if environ is None else environ
    if source is None:
        warn_unknown_variables(env)
    hints = typing.get_type_hints(cls)
    values: dict[str, Any] = {}
    origins: dict[str, str] = {}
    for item in fields(cls):  # type: ignore[arg-type]
        kind = hints[item.name]
        if ENV not in item.metadata:
            if isinstance(kind, type) and kind in _CONFIGS:
                inner = getattr(base if base is not None else cls(), item.name)
                values[item.name] = from_env(kind, env, source=item.name, base=inner)
            continue
        name = _variable(item, source)
        raw = env.get(name)
        if raw is None or not raw.strip():
            continue
        parse = item.metadata.get(PARSE) or _parser(kind)
        values[item.name] = _parsed(parse, name, raw)
        origins[item.name] = f"{name}={mask_url(raw)!r}"
    try:
        if base is not None:
            return replace(base, **values)  # type: ignore[type-var]
        return cls(**values)
    except ConfigurationError as error:
        named = [origin for name, origin in origins.items() if name in str(error)]
        blamed = ", ".join(named or origins.values())
        if not blamed:
            raise
        raise ConfigurationError(f"{blamed}: {error}") from None


@dataclass(frozen=True)
class Variable:
    """One ``RETRIEVAL_*`` variable: the config field it sets, its default and its help."""

    name: str
    field: str
    default: str
    help: str


def variables() -> list[Variable]:
    """Every variable the registered configs read, in declaration order (a variable that two
    configs share is listed once, naming both fields)."""
    found: dict[str, Variable] = {}
    for cls in _top_level():
        for variable in _class_variables(cls):
            known = found.get(variable.name)
            if known is None:
                found[variable.name] = variable
            else:
                both = f"{known.field}, {variable.field}"
                found[variable.name] = replace(known, field=both)
    return list(found.values())


def read_elsewhere(variables: Mapping[str, str]) -> None:
    """Declare ``RETRIEVAL_*`` variables that a program beside the library reads (name: what
    for), such as a test suite's database URL: setting one then draws no warning."""
    _READ_ELSEWHERE.update(variables)


def known_variables() -> frozenset[str]:
    """Every ``RETRIEVAL_*`` name the package reads, each source's spelled out, and those
    declared with :func:`read_elsewhere`."""
    return _known_variables(len(_CONFIGS)) | frozenset(_READ_ELSEWHERE)


@functools.cache
def _known_variables(configs: int) -> frozenset[str]:
    # Made again when another config class registers (``configs`` is their number).
    names = set()
    for cls in _top_level():
        for nested, source in _sources(cls):
            for item in fields(nested):
                if ENV in item.metadata:
                    names.add(_variable(item, source))
    return frozenset(names)


def unknown_variables(environ: Mapping[str, str]) -> list[str]:
    """A line for each ``RETRIEVAL_*`` variable of ``environ`` the package does not read (a typo
    would otherwise be ignored), naming the closest one it does read."""
    known = known_variables()
    lines = []
    for name in sorted(environ):
        if not name.startswith("RETRIEVAL_") or name in known:
            continue
        close = difflib.get_close_matches(name, known, n=1)
        hint = f"; did you mean {close[0]}?" if close else ""
        lines.append(f"{name} is set but retrieval reads no such variable{hint}")
    return lines


def warn_unknown_variables(environ: Mapping[str, str]) -> None:
    """Log a warning, once per name, for each line of :func:`unknown_variables`."""
    for line in unknown_variables(environ):
        name = line.split(" ", 1)[0]
        if name not in _warned:
            _warned.add(name)
            logger.warning("%s", line)


def configuration_markdown() -> str:
    """``docs/configuration.md``: every variable with its field, default and meaning."""
    lines = [
        "# Configuration",
        "",
        "<!-- Generated from the config classes' field declarations by "
        "`retrieval config --markdown > docs/configuration.md`; a test checks it is current. -->",
        "",
        "Every setting is a field of a frozen config class (`DatabaseConfig`, `WriteConfig`, "
        "`RetrievalConfig` and its per-source `SourceConfig`) and can be given in Python or "
        "through the environment variable below; `from_env()` reads them. The CLI, and every "
        "entry point given no config (`connect()`, `MemoryStore`, `HybridRetriever`, "
        "`DocumentStore`, the async classes), read them too; a config given in Python is used "
        "as it is. An unset or empty variable keeps the default. A `RETRIEVAL_*` variable that "
        "no setting reads is reported once in the log, with the closest known name.",
        "",
        "`<SOURCE>` is one of `WORKING_STATE`, `SEMANTIC`, `EPISODIC`, `DOCUMENTS`.",
        "",
        "| variable | field | default | meaning |",
        "|---|---|---|---|",
    ]
    for variable in variables():
        meaning = variable.help.replace("|", "\\|")
        default = variable.default.replace("|", "\\|")
        lines.append(f"| `{variable.name}` | `{variable.field}` | {default} | {meaning} |")
    return "\n".join(lines) + "\n"


def _class_variables(cls: type[Any]) -> Iterator[Variable]:
    instance = cls()
    hints = typing.get_type_hints(cls)
    nested_done: set[type[Any]] = set()
    for item in fields(cls):
        kind = hints[item.name]
        if ENV in item.metadata:
            default = item.metadata.get(DEFAULT_TEXT) or _shown(getattr(instance, item.name))
            name = f"{cls.__name__}.{item.name}"
            yield Variable(item.metadata[ENV], name, default, item.metadata[HELP])
        elif isinstance(kind, type) and kind in _CONFIGS and kind not in nested_done:
            nested_done.add(kind)
            yield from _per_source(cls, kind)


def _per_source(owner: type[Any], nested: type[Any]) -> Iterator[Variable]:
    instance = owner()
    sources = [name for name, kind in _nested_fields(owner) if kind is nested]
    for item in fields(nested):
        if ENV not in item.metadata:
            continue
        shown = [_shown(getattr(getattr(instance, source), item.name)) for source in sources]
        default = (
            shown[0]
            if len(set(shown)) == 1
            else ", ".join(
                f"{source} {value}" for source, value in zip(sources, shown, strict=True)
            )
        )
        name = f"{owner.__name__}.<source>.{item.name}"
        yield Variable(item.metadata[ENV], name, default, item.metadata[HELP])


def _nested_fields(cls: type[Any]) -> list[tuple[str, type[Any]]]:
    hints = typing.get_type_hints(cls)
    return [
        (item.name, hints[item.name])
        for item in fields(cls)
        if isinstance(hints[item.name], type) and hints[item.name] in _CONFIGS
    ]


def _top_level() -> list[type[Any]]:
    """The registered configs that no other config nests (a source's is read per source)."""
    nested = {kind for cls in _CONFIGS for _, kind in _nested_fields(cls)}
    return [cls for cls in _CONFIGS if cls not in nested]


def _sources(cls: type[Any]) -> Iterator[tuple[type[Any], str | None]]:
    yield cls, None
    for name, kind in _nested_fields(cls):
        yield kind, name


def _variable(item: dataclasses.Field[Any], source: str | None) -> str:
    name: str = item.metadata[ENV]
    if SOURCE in name:
        if source is None:
            raise ConfigurationError(f"{name} is read per source: nest its config in another")
        return name.replace(SOURCE, source.upper())
    return name


def _shown(value: object) -> str:
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, frozenset | set):
        return ", ".join(sorted(value)) or "none"
    if isinstance(value, Mapping):
        return "none" if not value else ", ".join(f"{k}: {v}" for k, v in value.items())
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _parsed(parse: Callable[[str], Any], name: str, raw: str) -> Any:
    try:
        return parse(raw)
    except ConfigurationError as error:
        raise ConfigurationError(f"{name}={mask_url(raw)!r}: {error}") from None
    except ValueError:
        raise ConfigurationError(f"{name}={mask_url(raw)!r} is {_expected(parse)}") from None


def _expected(parse: Callable[[str], Any]) -> str:
    if parse is _integer:
        return "not an integer"
    return "not a number" if parse is _number else "not valid"


def _parser(kind: Any) -> Callable[[str], Any]:
    """How the text of a variable becomes a value of the field's declared type."""
    origin = typing.get_origin(kind)
    arguments = typing.get_args(kind)
    if origin in (typing.Union, types.UnionType) and type(None) in arguments:
        inner = _parser(next(argument for argument in arguments if argument is not type(None)))
        return functools.partial(_optional, inner)
    if kind is bool:
        return _flag
    if kind is int:
        return _integer
    if kind is float:
        return _number
    if kind is str:
        return str
    if kind is Path:
        return _path
    if origin is typing.Literal:
        return functools.partial(_choice, tuple(str(argument) for argument in arguments))
    if origin is frozenset:
        element = _parser(arguments[0]) if arguments else str
        return functools.partial(_names, element)
    raise TypeError(f"no parser for a setting of type {kind!r}: give parse=")


def _optional(inner: Callable[[str], Any], raw: str) -> Any:
    return None if raw.strip().lower() in _NONE_WORDS else inner(raw)


def _flag(raw: str) -> bool:
    word = raw.strip().lower()
    if word in _TRUE:
        return True
    if word in _FALSE:
        return False
    raise ConfigurationError("is not a switch: use true or false")


def _integer(raw: str) -> int:
    return int(raw)


def _number(raw: str) -> float:
    return float(raw)


def _path(raw: str) -> Path:
    return Path(raw).expanduser()


def _choice(choices: tuple[str, ...], raw: str) -> str:
    word = raw.strip().lower()
    if word not in choices:
        raise ConfigurationError(f"{word!r} is not one of {', '.join(choices)}")
    return word


def _names(element: Callable[[str], Any], raw: str) -> frozenset[Any]:
    return frozenset(element(name.strip()) for name in raw.split(",") if name.strip())


__all__ = [
    "UNIT",
    "Variable",
    "Within",
    "check_ranges",
    "configurable",
    "configuration_markdown",
    "from_env",
    "known_variables",
    "read_elsewhere",
    "require_int",
    "setting",
    "unknown_variables",
    "variables",
    "warn_unknown_variables",
]


def require_int(name: str, value: object, *, minimum: int) -> None:
    """A :class:`ConfigurationError` unless ``value`` is an integer (not a bool) >= ``minimum``."""
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ConfigurationError(f"{name} must be an integer >= {minimum}, got {value!r}")
