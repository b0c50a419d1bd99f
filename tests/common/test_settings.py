"""The one reading of each kind of setting text, shared by the broker's and topics' settings and the
Spark source's and sink's options: what it accepts and how it says what it refuses."""

import pytest

from broker.common.settings import (
    ConfigError,
    boolean_setting,
    choice_setting,
    integer_setting,
    parse_boolean,
    parse_choice,
    parse_integer,
)


@pytest.mark.parametrize("text, value", [("true", True), ("FALSE", False), (" True ", True)])
def test_booleans_are_true_or_false_in_any_case(text, value):
    assert parse_boolean(text) is value
    assert boolean_setting("log.cleaner.enable", text) is value


def test_a_boolean_setting_names_its_key_and_the_text_refused():
    with pytest.raises(ValueError, match=r"^'yes' is not true or false$"):
        parse_boolean("yes")
    with pytest.raises(ConfigError, match=r"^log.cleaner.enable: 'yes' is not true or false$"):
        boolean_setting("log.cleaner.enable", "yes")


def test_integers_are_decimal_within_their_range():
    assert parse_integer(" 42 ") == 42
    assert integer_setting(0, 100)("segment.ms", "100") == 100
    with pytest.raises(ValueError, match=r"^'4k' is not an integer$"):
        parse_integer("4k")
    with pytest.raises(ConfigError, match=r"^segment.ms: '4k' is not an integer \(for example segment.ms=1000\)$"):
        integer_setting(1)("segment.ms", "4k")
    with pytest.raises(ConfigError, match=r"^num.io.threads: 0 is out of range, it must be between 1 and 256$"):
        integer_setting(1, 256)("num.io.threads", "0")


def test_choices_match_exactly_unless_case_is_ignored():
    assert choice_setting("CreateTime", "LogAppendTime")("message.timestamp.type", " LogAppendTime") == "LogAppendTime"
    with pytest.raises(ConfigError, match=r"^message.timestamp.type: 'logappendtime' is not one of CreateTime, "):
        choice_setting("CreateTime", "LogAppendTime")("message.timestamp.type", "logappendtime")
    assert parse_choice("Latest", ("error", "latest"), ignore_case=True) == "latest"
    with pytest.raises(ValueError, match=r"^'earliest' is not one of error, latest$"):
        parse_choice("earliest", ("error", "latest"), ignore_case=True)
