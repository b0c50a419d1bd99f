"""Java properties files, as Kafka's tools read them: the broker's ``--config`` and the client
tools' ``--command-config``."""

from broker.common.settings import ConfigError


def read_properties(path: str, option: str = "--config") -> dict[str, str]:
    """A Java properties file (given as ``option``): ``key=value``, ``key: value`` or ``key value``;
    ``#``/``!`` comments; a trailing backslash continues the line."""
    try:
        with open(path, encoding="utf-8") as f:
            raw = f.read().splitlines()
    except OSError as exc:
        raise ConfigError(f"{option} {path}: {exc.strerror or exc}") from None
    properties = {}
    logical = ""
    for line in raw:
        stripped = line.strip()
        if not logical and (not stripped or stripped[0] in "#!"):
            continue
        if stripped.endswith("\\") and not stripped.endswith("\\\\"):
            logical += stripped[:-1]
            continue
        logical += stripped
        separators = [i for i in (logical.find("="), logical.find(":"), logical.find(" ")) if i > 0]
        if not separators:
            raise ConfigError(f"{option} {path}: line {logical[:40]!r} is not key=value")
        cut = min(separators)
        properties[logical[:cut].strip()] = logical[cut + 1 :].strip()
        logical = ""
    return properties
