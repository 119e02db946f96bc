"""Replays protocol/conformance/*.transcript against a fresh daemon: stdio and socket, newline and Content-Length."""

import pytest

import harness

DIR = harness.PROTOCOL / "conformance"
TRANSCRIPTS = sorted(DIR.glob("*.transcript"))


def cases():
    for path in TRANSCRIPTS:
        t = harness.Transcript(path)
        for transport in ("stdio", "socket"):
            for framing in ("newline", "content-length"):
                marks = []
                if t.known_bug:
                    # strict: once the bug is fixed the transcript passes, and the run fails until the marker is removed
                    marks.append(pytest.mark.xfail(reason="known server bug: " + t.known_bug, strict=True))
                if transport not in t.transports or framing not in t.framings:
                    marks.append(pytest.mark.skip(reason=f"{path.name} is for {t.transports} / {t.framings}"))
                yield pytest.param(path, transport, framing, id=f"{path.stem}-{transport}-{framing}", marks=marks)


@pytest.mark.parametrize("path,transport,framing", list(cases()))
def test_transcript(path, transport, framing, daemon_factory, observer):
    t = harness.Transcript(path)
    d = daemon_factory(transport, *t.args, base_args=t.serve_args)
    conn = d.connect(framing)
    try:
        harness.replay(t, d, conn)
    finally:
        conn.close()
    observer.assert_clean()


def test_transcripts_cover_every_method_and_error_code(contract):
    """Every documented method is sent by some transcript and every documented error code is expected by one
    (except those no transcript can provoke, listed here with the test that provokes them instead, which must
    exist)."""
    sent, codes = set(), set()
    for path in TRANSCRIPTS:
        t = harness.Transcript(path)
        sent |= t.sent_methods()
        codes |= t.expected_codes()
    missing = set(contract.methods) - sent
    assert not missing, f"no transcript calls {sorted(missing)}"
    elsewhere = {  # "path::test (why not a transcript)", or why nothing can provoke it
        -32010: "protocol/tests/test_limits.py::test_too_many_connections (several connections)",
        -32005: "Tests/TipsServerTests/InProcess/InProcessServerTests.swift::aFailedCommitIsNeverAcknowledged "
        "(a datastore that fills up; DatastoreFailureTests does it to the daemon on a full tmpfs, as root)",
        -32603: "not provokable: internal error",
        -32012: "Tests/TipsSyncTests/SyncDaemonTests.swift::fullOutboxRefusesSyncedChanges "
        "(needs --sync and PostgreSQL)",
        -32013: "protocol/tests/test_hosted.py::test_tokens_are_refused_with_a_clear_error_and_nothing_changes "
        "(needs --hosted, PostgreSQL and an identity provider's tokens)",
        -32015: "protocol/tests/test_hosted.py::test_quotas_and_an_unavailable_postgresql_are_answered_with_retry_after "
        "(needs --hosted and PostgreSQL)",
        -32016: "protocol/tests/test_hosted.py::test_quotas_and_an_unavailable_postgresql_are_answered_with_retry_after "
        "(needs --hosted and PostgreSQL stopped)",
    }
    for code, where in elsewhere.items():
        if not where.startswith("not provokable"):
            path, test = where.split(" ")[0].split("::")
            assert test in (harness.REPO / path).read_text(), f"{code}: {path} has no test {test}"
    documented = {e["code"] for e in contract.errors.values()}
    uncovered = documented - codes - set(elsewhere)
    assert not uncovered, f"no transcript expects error codes {sorted(uncovered)}"


def test_transcript_syntax_examples():
    m = harness.match
    assert m({"a": "$number", "b?": "$string"}, {"a": 1.5}, {}) is None
    assert m({"a": "$number"}, {"a": 1, "b": 2}, {}) is not None
    assert m(["$unordered", 1, 2], [2, 1], {}) is None
    assert m("$regex:sub-[0-9]+", "sub-12", {}) is None
    b = {}
    assert m({"s": "$capture:s"}, {"s": "x"}, b) is None and b == {"s": "x"}
    assert m("$$literal", "$literal", {}) is None
    assert m(1, True, {}) is not None and m(0, False, {}) is not None and m(None, False, {}) is not None
