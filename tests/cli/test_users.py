"""``kafkalog users`` as a real process, without a broker: the credentials file is readable by its
owner only, and a log directory that does not exist is an error of ``list`` and ``delete``."""

import os
import stat

from .support import kafkalog, one_line_error


def test_the_credentials_file_is_private_even_when_it_was_not(tmp_path):
    log_dir = tmp_path / "log"
    added = kafkalog("users", "add", "alice", "--password", "secret-1", "--log-dir", log_dir)
    assert added.returncode == 0, added.stderr
    path = log_dir / "scram-credentials.json"
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    os.chmod(path, 0o644)  # as versions before this one wrote it
    assert kafkalog("users", "add", "bob", "--password", "secret-2", "--log-dir", log_dir).returncode == 0
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    listed = kafkalog("users", "list", "--log-dir", log_dir)
    assert (listed.returncode, listed.stdout.split()) == (
        0,
        ["alice", "SCRAM-SHA-256,SCRAM-SHA-512", "bob", "SCRAM-SHA-256,SCRAM-SHA-512"],
    )


def test_a_log_directory_that_does_not_exist_is_an_error(tmp_path):
    missing = tmp_path / "missing"
    one_line_error(
        kafkalog("users", "list", "--log-dir", missing), 1, f"kafkalog users: --log-dir {missing}: no such directory"
    )
    one_line_error(
        kafkalog("users", "delete", "bob", "--log-dir", missing),
        1,
        f"kafkalog users: --log-dir {missing}: no such directory",
    )
    (tmp_path / "file").write_text("")
    one_line_error(
        kafkalog("users", "list", "--log-dir", tmp_path / "file"),
        1,
        f"kafkalog users: --log-dir {tmp_path / 'file'}: not a directory",
    )
    assert not missing.exists()


def test_listing_a_log_directory_without_users_says_so(tmp_path):
    done = kafkalog("users", "list", "--log-dir", tmp_path)
    assert (done.returncode, done.stdout) == (0, "")
    assert done.stderr == f"kafkalog users: note: no SCRAM users in {tmp_path / 'scram-credentials.json'}\n"
