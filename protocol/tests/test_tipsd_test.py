"""`tipsd test` (issue #16) from the outside: the repository's conformance suite and the examples run through it,
and its JUnit XML is read by junitparser (PyPI) with the right counts."""

import subprocess

import junitparser

import harness

CONFORMANCE = sorted((harness.PROTOCOL / "conformance").glob("*.transcript"))
EXAMPLES = sorted((harness.PROTOCOL / "examples").glob("*.transcript"))


def run(*args, cwd=None):
    return subprocess.run(
        [harness.tipsd_bin(), "test", *map(str, args)], capture_output=True, text=True, timeout=120, cwd=cwd
    )


def test_the_conformance_suite_and_the_examples_pass_in_process(tmp_path):
    report = tmp_path / "junit.xml"
    r = run("--junit", report, *CONFORMANCE, *EXAMPLES)
    assert r.returncode == 0, r.stdout + r.stderr
    total = len(CONFORMANCE) + len(EXAMPLES)
    assert f"tipsd test: {total} transcripts, {total} passed, 0 failed, 0 errors" in r.stdout
    xml = junitparser.JUnitXml.fromfile(str(report))
    suites = list(xml) if isinstance(xml, junitparser.JUnitXml) else [xml]
    assert sum(s.tests for s in suites) == total
    assert sum(s.failures for s in suites) == 0 and sum(s.errors for s in suites) == 0
    names = {case.name for s in suites for case in s}
    assert "20-observe-filter-tip" in names and "filter-tip" in names


def test_failures_errors_and_known_bugs_are_counted(tmp_path):
    header = (
        '--> {"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"1.1","clientInfo":{"name":"t"}}}\n'
        '<-- {"jsonrpc":"2.0","id":1,"result":"$object"}\n'
    )
    donate = '--> {"jsonrpc":"2.0","id":2,"method":"events/donate","params":{"id":"e"}}\n'
    files = {
        "a-pass.transcript": header + donate + '<-- {"jsonrpc":"2.0","id":2,"result":{"count":1,"lifetime":1}}\n',
        "b-wrong.transcript": header + donate + '<-- {"jsonrpc":"2.0","id":2,"result":{"count":7,"lifetime":1}}\n',
        "c-malformed.transcript": header + "<- oops\n",
        "d-known-bug.transcript": "#! known-bug: a made-up bug for this test\n"
        + header
        + donate
        + '<-- {"jsonrpc":"2.0","id":2,"result":{"count":9,"lifetime":9}}\n',
    }
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    report = tmp_path / "junit.xml"
    r = run("--junit", report, *sorted(tmp_path.glob("*.transcript")))
    assert r.returncode == 1
    out = r.stdout
    assert "ok    a-pass" in out
    assert (
        f"FAIL  {tmp_path}/b-wrong.transcript:4: message does not match: line 4: /result/count: expected 7, got 1"
        in out
    )
    assert '      -    "count": 7,\n      +    "count": 1,' in out  # the diff, indented under its line
    assert f"FAIL  {tmp_path}/c-malformed.transcript:3: a line must start with" in out
    assert "skip  d-known-bug: known bug" in out
    assert "tipsd test: 4 transcripts, 1 passed, 1 failed, 1 errors, 1 skipped (known bugs)" in out
    xml = junitparser.JUnitXml.fromfile(str(report))
    suites = list(xml) if isinstance(xml, junitparser.JUnitXml) else [xml]
    assert (
        sum(s.tests for s in suites),
        sum(s.failures for s in suites),
        sum(s.errors for s in suites),
        sum(s.skipped for s in suites),
    ) == (4, 1, 1, 1)
    cases = {case.name: case for s in suites for case in s}
    failure = cases["b-wrong"].result[0]
    assert isinstance(failure, junitparser.Failure)
    assert failure.message.endswith(
        "b-wrong.transcript:4: message does not match: line 4: /result/count: expected 7, got 1"
    )
    assert isinstance(cases["c-malformed"].result[0], junitparser.Error)
    assert isinstance(cases["d-known-bug"].result[0], junitparser.Skipped)
    assert cases["a-pass"].result == []


def test_usage_errors_exit_2():
    assert run().returncode == 2
    assert run("--frobnicate", "x.transcript").returncode == 2
    missing = run("/nonexistent/x.transcript")
    assert missing.returncode == 1 and "cannot read it" in missing.stdout
