"""JAAS login settings, as Kafka reads ``sasl.jaas.config``:

    org.apache.kafka.common.security.scram.ScramLoginModule required username="alice" password="secret";

The broker reads its PLAIN users from ``user_<name>="<password>"`` options of PlainLoginModule; a
client reads ``username`` and ``password``. Errors never repeat the text (it holds passwords).
"""

import re
from typing import NamedTuple

MODULES = {
    "org.apache.kafka.common.security.plain.PlainLoginModule": "PLAIN",
    "org.apache.kafka.common.security.scram.ScramLoginModule": "SCRAM",
}
_ENTRY = re.compile(
    r"\s*(?P<module>[\w.$]+)\s+(?P<flag>required|requisite|sufficient|optional)(?P<options>.*?);\s*$", re.DOTALL
)
_OPTION = re.compile(r'\s*(?P<key>[\w.-]+)\s*=\s*(?:"(?P<quoted>(?:[^"\\]|\\.)*)"|(?P<bare>[^\s"]+))')


class JaasError(ValueError):
    """A ``sasl.jaas.config`` that cannot be read; the message names the setting, never its value."""


class JaasConfig(NamedTuple):
    module: str
    options: dict

    @property
    def family(self) -> str:
        """PLAIN or SCRAM."""
        return MODULES[self.module]

    def users(self) -> dict[str, str]:
        """PlainLoginModule's ``user_<name>`` options: the broker's PLAIN users and their passwords."""
        return {key[len("user_") :]: value for key, value in self.options.items() if key.startswith("user_")}


def parse(key: str, text: str) -> JaasConfig:
    match = _ENTRY.match(text or "")
    if not match:
        raise JaasError(
            f"{key}: not a JAAS login entry; for example {key}=org.apache.kafka.common.security.scram."
            f'ScramLoginModule required username="alice" password="...";'
        )
    module = match.group("module")
    if module not in MODULES:
        raise JaasError(f"{key}: login module {module} is not supported (use {' or '.join(MODULES)})")
    options, rest = {}, match.group("options")
    position = 0
    while rest[position:].strip():
        option = _OPTION.match(rest, position)
        if not option:
            raise JaasError(f'{key}: cannot read the options of {module} (write them as name="value")')
        value = option.group("quoted")
        options[option.group("key")] = re.sub(r"\\(.)", r"\1", value) if value is not None else option.group("bare")
        position = option.end()
    return JaasConfig(module, options)


def credentials(key: str, text: str) -> tuple[str, str]:
    """A client's ``(username, password)`` from its JAAS entry."""
    config = parse(key, text)
    missing = [name for name in ("username", "password") if name not in config.options]
    if missing:
        raise JaasError(f"{key}: {config.module} needs {' and '.join(missing)}")
    return config.options["username"], config.options["password"]
