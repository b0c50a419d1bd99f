"""Settings given as text (properties files, ``--set key=value``, AlterConfigs, Spark options): the
error that names a bad setting, and the one way each kind of value is read from its text.

``parse_boolean``, ``parse_integer`` and ``parse_choice`` read a value and raise ValueError saying
what the text is not; ``boolean_setting``, ``integer_setting`` and ``choice_setting`` are the
parsers of a Kafka setting (``key, text -> value``), raising ConfigError that starts with the key.
"""

from collections.abc import Callable

LONG_MAX = 2**63 - 1  # Kafka's Long.MAX_VALUE: the "no limit" of its long settings


class ConfigError(ValueError):
    """A configuration key is unknown or its value is invalid; the message names the key."""


def parse_boolean(text: str) -> bool:
    """``true`` or ``false``, in any case, spaces around ignored."""
    value = str(text).strip().lower()
    if value not in ("true", "false"):
        raise ValueError(f"{text!r} is not true or false")
    return value == "true"


def parse_integer(text: str) -> int:
    """A decimal integer, spaces around ignored."""
    try:
        return int(str(text).strip())
    except ValueError:
        raise ValueError(f"{text!r} is not an integer") from None


def parse_choice(text: str, choices: tuple[str, ...], ignore_case: bool = False) -> str:
    """One of ``choices`` (lowercase ones when ``ignore_case``), spaces around ignored."""
    value = str(text).strip()
    if ignore_case:
        value = value.lower()
    if value not in choices:
        raise ValueError(f"{text!r} is not one of {', '.join(choices)}")
    return value


def boolean_setting(key: str, text: str) -> bool:
    try:
        return parse_boolean(text)
    except ValueError as exc:
        raise ConfigError(f"{key}: {exc}") from None


def integer_setting(minimum: int, maximum: int = LONG_MAX) -> Callable[[str, str], int]:
    """The parser of an integer setting between ``minimum`` and ``maximum``."""

    def parse(key: str, text: str) -> int:
        try:
            value = parse_integer(text)
        except ValueError as exc:
            raise ConfigError(f"{key}: {exc} (for example {key}={max(minimum, 1000)})") from None
        if not minimum <= value <= maximum:
            raise ConfigError(f"{key}: {value} is out of range, it must be between {minimum} and {maximum}")
        return value

    return parse


def choice_setting(*choices: str) -> Callable[[str, str], str]:
    """The parser of a setting that is one of ``choices`` (case matters)."""

    def parse(key: str, text: str) -> str:
        try:
            return parse_choice(text, choices)
        except ValueError as exc:
            raise ConfigError(f"{key}: {exc}") from None

    return parse
