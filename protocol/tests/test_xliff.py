"""`tipsd strings --format xliff` against translate-toolkit (PyPI's `translate-toolkit`, what Weblate and Pootle read
XLIFF with): the files tipsd writes are read by it without error, unit for unit with the catalog's copy, and a file it
writes after a translator's edits imports back into the message files (issue #25)."""

from __future__ import annotations

import json
import subprocess

import pytest

import harness

xliff = pytest.importorskip("translate.storage.xliff", reason="make test installs translate-toolkit")

DEMO = harness.REPO / "catalog" / "demo.json"
MESSAGES = harness.REPO / "catalog" / "messages"
LOCALES = ["en", "ja", "zh-Hans", "ko"]


def tipsd(*args: str) -> subprocess.CompletedProcess:
    result = subprocess.run([harness.tipsd_bin(), *args], capture_output=True, text=True, timeout=harness.TIMEOUT)
    assert result.returncode == 0, result.stderr
    return result


def export(tmp_path, fmt: str):
    out = tmp_path / fmt
    tipsd("strings", "export", str(DEMO), "--messages", str(MESSAGES), "--format", fmt, "--out", str(out))
    return out


def units(store):
    """(id, source, target) of each unit, ids without translate-toolkit's `original\\x04` prefix."""
    return [(u.getid().split("\x04")[-1], u.source, u.target) for u in store.units if not u.isheader()]


def test_translate_toolkit_reads_every_file_tipsd_writes_with_the_catalogs_copy(tmp_path):
    files = export(tmp_path, "xliff")
    messages = export(tmp_path, "json")
    source = json.loads((messages / "en.json").read_text())["tipkit"]
    assert sorted(p.name for p in files.iterdir()) == sorted(f"{locale}.xliff" for locale in LOCALES)
    for locale in LOCALES:
        store = xliff.xlifffile.parsefile(str(files / f"{locale}.xliff"))
        assert store.getsourcelanguage() == "en"
        assert store.gettargetlanguage() == locale
        copy = json.loads((messages / f"{locale}.json").read_text())["tipkit"]
        read = units(store)
        # Every copy key in catalog order, with its source copy and the locale's translation when it has one.
        assert [unit_id for unit_id, _, _ in read] == [f"tipkit.{key}" for key in source]
        for unit_id, unit_source, unit_target in read:
            key = unit_id.removeprefix("tipkit.")
            assert unit_source == source[key]
            assert unit_target == copy.get(key), (locale, key)
        translated = [u for u in store.units if not u.isheader() and u.target]
        assert translated and all(u.istranslated() for u in translated), locale


def test_a_file_translate_toolkit_writes_imports_back(tmp_path):
    files = export(tmp_path, "xliff")
    store = xliff.xlifffile.parsefile(str(files / "ja.xliff"))
    by_id = {u.getid().split("\x04")[-1]: u for u in store.units if not u.isheader()}
    # A translator revises one string (with markup characters and a line break) and adds an id the catalog lacks.
    by_id["tipkit.filter.tip.title"].target = "もっと絞り込めます & <速く>\n二行目"
    extra = xliff.xliffunit("Not in the catalog")
    extra.setid("tipkit.nope.tip.title")
    extra.target = "カタログにない"
    store.addunit(extra)
    translated = tmp_path / "translated"
    translated.mkdir()
    store.savefile(str(translated / "ja.xliff"))

    # A file made from scratch by translate-toolkit (its own XLIFF dialect: version 1.1 namespace, approved units).
    french = xliff.xlifffile(sourcelanguage="en", targetlanguage="fr")
    unit = french.addsourceunit("You can narrow this down")
    unit.setid("tipkit.filter.tip.title")
    unit.target = "Vous pouvez affiner"
    missing = french.addsourceunit("Learn more")
    missing.setid("tipkit.filter.tip.actions.learn-more")
    french.savefile(str(translated / "fr.xliff"))

    out = tmp_path / "messages"
    result = tipsd(
        "strings", "import", str(DEMO), "--format", "xliff", "--from", str(translated), "--messages", str(out)
    )
    ja = json.loads((out / "ja.json").read_text())["tipkit"]
    assert ja["filter.tip.title"] == "もっと絞り込めます & <速く>\n二行目"
    assert ja["nope.tip.title"] == "カタログにない"
    original = json.loads((MESSAGES / "ja.json").read_text())["tipkit"]
    for key, value in original.items():
        if key != "filter.tip.title":
            assert ja[key] == value, key
    fr = json.loads((out / "fr.json").read_text())["tipkit"]
    assert fr == {"filter.tip.title": "Vous pouvez affiner"}
    # The unknown id and the missing translation are reported with their place in the XLIFF file.
    assert f"{translated / 'ja.xliff'}:" in result.stderr and "tipkit.nope.tip.title" in result.stderr
    assert (
        f"{translated / 'fr.xliff'}:" in result.stderr
        and "tipkit.filter.tip.actions.learn-more has no fr translation" in result.stderr
    )
