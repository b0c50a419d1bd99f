"""CRC-32C: the compiled paths agree with crcmod (the user's chosen library) on every input."""

import os

import crcmod.predefined
import pytest
from hypothesis import given
from hypothesis import strategies as st

from broker.records import _crc32c, crc

crcmod_crc32c = crcmod.predefined.mkPredefinedCrcFun("crc-32c")
PATHS = {"fastest": _crc32c.crc32c, "portable": _crc32c.crc32c_portable}


def test_the_extension_is_what_batches_are_checked_with():
    assert crc.crc32c is _crc32c.crc32c
    assert crc.CRC32C_IMPLEMENTATION in ("sse4.2", "table")


@pytest.mark.parametrize("path", PATHS)
def test_check_value(path):
    assert PATHS[path](b"123456789") == 0xE3069283
    assert PATHS[path](b"") == 0


@pytest.mark.parametrize("path", PATHS)
@given(data=st.binary(max_size=300), start=st.integers(0, 16))
def test_equal_to_crcmod_at_any_length_and_alignment(path, data, start):
    view = memoryview(data)[min(start, len(data)) :]
    assert PATHS[path](view) == crcmod_crc32c(view)


@pytest.mark.parametrize("path", PATHS)
def test_large_inputs_in_any_buffer_type(path):
    data = os.urandom(3 * 65536 + 5)  # above the size where the GIL is released
    expected = crcmod_crc32c(data)
    assert PATHS[path](data) == expected
    assert PATHS[path](bytearray(data)) == expected
    assert PATHS[path](memoryview(data)) == expected


@pytest.mark.parametrize("path", PATHS)
def test_a_non_contiguous_or_non_buffer_argument_is_a_type_error(path):
    with pytest.raises(TypeError):
        PATHS[path]("text")
    with pytest.raises((TypeError, BufferError)):
        PATHS[path](memoryview(b"abcdef")[::2])
