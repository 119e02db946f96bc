"""The A/B variant hash (protocol/README.md, Variants), implemented here independently of the engine: FNV-1a 64 over
the install id, a NUL and the tip id in UTF-8, SplitMix64's finaliser, modulo the number of variants. It is checked
against published test vectors of both functions, and it recomputes the vectors the engine's Swift test asserts
(Tests/TipsEngineTests/VariantTests.swift) and the variants a real daemon picks."""

import re

import harness

MASK = (1 << 64) - 1


def fnv1a64(data: bytes) -> int:
    h = 0xCBF29CE484222325
    for byte in data:
        h = ((h ^ byte) * 0x100000001B3) & MASK
    return h


def splitmix64(state: int) -> int:
    """The first output of SplitMix64 seeded with ``state``: the golden-ratio step, then the finaliser."""
    z = (state + 0x9E3779B97F4A7C15) & MASK
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return z ^ (z >> 31)


def variant_index(install_id: str, tip_id: str, count: int) -> int:
    return splitmix64(fnv1a64(install_id.encode() + b"\0" + tip_id.encode())) % count


def test_the_parts_match_published_vectors():
    # FNV-1a 64 (the FNV reference test suite) and SplitMix64 (Vigna's splitmix64.c seeded with 0 and 1234567).
    assert fnv1a64(b"") == 0xCBF29CE484222325
    assert fnv1a64(b"a") == 0xAF63DC4C8601EC8C
    assert fnv1a64(b"foobar") == 0x85944171F73967E8
    assert splitmix64(0) == 0xE220A8397B1DCDAF
    assert splitmix64(1234567) == 6457827717110365317


def test_the_engine_tests_vectors_are_this_hash():
    source = (harness.REPO / "Tests" / "TipsEngineTests" / "VariantTests.swift").read_text()
    # The Swift test's call and its expected indices, as written there.
    assert 'Engine.variantIndex(installID: "install-\\(i)", tipID: "filter.tip", count: 2)' in source
    found = re.search(r"let expected = \[([0-9, ]+)\]", source)
    assert found, "VariantTests.stableHash's expected list"
    expected = [int(x) for x in found.group(1).split(",")]
    assert len(expected) >= 10
    assert expected == [variant_index(f"install-{i}", "filter.tip", 2) for i in range(len(expected))]


def test_the_daemon_picks_the_hashed_variant(daemon_factory):
    """Each connection sends its own install id and registers a tip this install has not seen: the variant the
    daemon assigns is the one this hash picks (both indices occur)."""
    d = daemon_factory("socket")
    cases = [(f"hash-install-{i}", f"hash.tip.{i}") for i in range(8)]
    picks = [variant_index(install, tip, 2) for install, tip in cases]
    assert set(picks) == {0, 1}
    for (install, tip), index in zip(cases, picks, strict=True):
        conn = d.connect()
        reply = conn.request(
            "initialize", {"protocolVersion": "1.1", "clientInfo": {"name": "hash"}, "installId": install}
        )
        assert "result" in reply, reply
        reply = conn.request(
            "tips/register",
            {"tips": [{"id": tip, "title": "T", "variants": {"first": {"title": "A"}, "second": {"title": "B"}}}]},
        )
        assert reply["result"]["tips"][0]["variant"] == ["first", "second"][index], (install, tip, reply)
        conn.close()
