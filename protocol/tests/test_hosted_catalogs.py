"""Catalogs published through the audited admin API (issue #48): `catalogs/publish` lints and stores a version in
PostgreSQL and every node of the fleet switches to it (observers told), a bad catalog is refused with its lint
errors and changes nothing, `catalogs/rollback` returns to a version, `catalogs/schedule` publishes at an instant
even across a node's restart (exactly once), and every administrative change lands in `audit/list`, whose rows
PostgreSQL refuses to update or delete.

Every wait is for a condition; TIMEOUT only keeps a broken daemon from hanging the suite.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import time

import pytest

from harness import TIMEOUT, Contract, tipsd_bin
from hosted import ADMIN_TOKEN, Hosted, RpcError, Session
from pgcluster import PostgresError

TIP = "alpha.tip"
# The file's catalog: the tip shows at once (no rules).
FILE_CATALOG = {"tips": [{"id": TIP, "title": "Alpha"}]}
# Published: the tip waits for an event nobody donates, so it stops displaying.
HIDDEN = {"tips": [{"id": TIP, "title": "Alpha", "rules": [{"event": "never.happens", "count": {"gte": 1}}]}]}
# Published: shows again, with new copy.
SHOWN = {"tips": [{"id": TIP, "title": "Alpha, again"}]}
BAD = {"tips": [{"id": TIP, "title": "Alpha", "rules": [{"event": "x.y", "count": {"gte": "three"}}]}]}


@pytest.fixture(scope="module")
def hosted(tmp_path_factory):
    world = Hosted()
    catalog = world.directory / "catalog.json"
    catalog.write_text(json.dumps(FILE_CATALOG))
    world.catalog = catalog
    yield world
    world.close()


CONTRACT = Contract()


async def call(session: Session, method: str, params: dict | None = None):
    """A request whose result (or error code) is checked against protocol/openrpc.json."""
    try:
        result = await session.call(method, params)
    except RpcError as error:
        assert error.code in CONTRACT.error_codes(method), f"{method}: error {error.code} is not documented"
        raise
    CONTRACT.result_validator(method).validate(result)
    return result


async def until(condition, what: str) -> None:
    deadline = asyncio.get_running_loop().time() + TIMEOUT
    while not condition():
        assert asyncio.get_running_loop().time() < deadline, f"timed out waiting: {what}"
        await asyncio.sleep(0.02)


def displays(session: Session) -> list[bool]:
    """The shouldDisplay values the session's observation of TIP was told, in order."""
    return [
        n["params"]["shouldDisplay"]
        for n in session.notifications
        if n["method"] == "tips/shouldDisplayChanged" and n["params"]["id"] == TIP
    ]


async def observe(session: Session) -> bool:
    """Observes TIP; whether it displays now."""
    result = await session.call("tips/observe", {"ids": [TIP]})
    return result["tips"][0]["shouldDisplay"]


async def audit(admin: Session) -> list[dict]:
    entries, after = [], None
    while True:
        page = await call(admin, "audit/list", {"after": after, "limit": 100})
        entries += page["entries"]
        if page["next"] is None:
            return entries
        after = page["next"]


def test_publish_reaches_every_node_bad_catalog_changes_nothing_and_rollback(hosted):
    one = hosted.node("cat-1", catalog=hosted.catalog)
    two = hosted.node("cat-2", catalog=hosted.catalog)

    async def body():
        admin = await Session.open(one.socket_path, ADMIN_TOKEN)
        users = [
            await Session.open(one.socket_path, hosted.token("ann")),
            await Session.open(two.socket_path, hosted.token("bob")),
        ]
        for user in users:
            assert await observe(user) is True

        # A bad catalog: refused with its lint errors; nothing stored, nothing recorded, nobody told.
        with pytest.raises(RpcError) as refused:
            await call(admin, "catalogs/publish", {"app": "default", "catalog": BAD, "note": "broken"})
        assert refused.value.code == -32602
        diagnostics = refused.value.data["diagnostics"]
        assert diagnostics and all(d["severity"] in ("error", "warning") for d in diagnostics)
        assert any(d["severity"] == "error" for d in diagnostics)
        history = await call(admin, "catalogs/history", {"app": "default"})
        assert history == {"app": "default", "current": None, "versions": []}
        assert hosted.query("SELECT count(*) FROM tipsd.catalog_versions").strip() == "0"
        assert not [e for e in await audit(admin) if e["action"].startswith("catalog.")]

        # An unknown app is refused precisely.
        with pytest.raises(RpcError) as unknown:
            await call(admin, "catalogs/publish", {"app": "nope", "catalog": HIDDEN})
        assert unknown.value.code == -32602 and '"nope"' in unknown.value.message

        # A user may not publish.
        with pytest.raises(RpcError) as forbidden:
            await call(users[0], "catalogs/publish", {"app": "default", "catalog": HIDDEN})
        assert forbidden.value.code == -32014

        # Dry run: both accounts resident on their nodes; on node one, ann's tip would stop displaying.
        dry = await call(admin, "catalogs/publish", {"app": "default", "catalog": HIDDEN, "dryRun": True})
        assert dry["dryRun"] is True and dry["version"] is None
        assert dry["residentAccounts"] == 1 and dry["changedAccounts"] == 1
        assert dry["diff"]["changed"] == [{"id": TIP, "rules": True, "copy": False, "variants": False, "other": False}]
        assert hosted.query("SELECT count(*) FROM tipsd.catalog_versions").strip() == "0"
        same = await call(admin, "catalogs/publish", {"app": "default", "catalog": FILE_CATALOG, "dryRun": True})
        assert same["changedAccounts"] == 0

        # Publish: every node switches, and its observers are told, within a few seconds.
        started = time.monotonic()
        published = await call(admin, "catalogs/publish", {"app": "default", "catalog": HIDDEN, "note": "hide it"})
        assert published["version"] == 1 and published["dryRun"] is False
        await until(lambda: all(displays(u) == [False] for u in users), "both nodes' observers told of the publish")
        elapsed = time.monotonic() - started
        assert elapsed < 5, f"the publish took {elapsed:.2f} s to reach every node"
        for node in (one, two):
            assert node.health()["hosted"]["catalog"] == published["digest"]

        # A second version, then back to the first: observers follow both.
        shown = await call(admin, "catalogs/publish", {"app": "default", "catalog": SHOWN, "note": "show it"})
        assert shown["version"] == 2
        await until(lambda: all(displays(u) == [False, True] for u in users), "observers told of version 2")
        rolled = await call(admin, "catalogs/rollback", {"app": "default", "version": 1})
        assert rolled == {"version": 1}
        await until(lambda: all(displays(u) == [False, True, False] for u in users), "observers told of the rollback")
        with pytest.raises(RpcError) as missing:
            await call(admin, "catalogs/rollback", {"app": "default", "version": 9})
        assert missing.value.code == -32602

        diff = await call(admin, "catalogs/diff", {"app": "default", "from": 1, "to": 2})
        assert diff["from"] == 1 and diff["to"] == 2 and diff["added"] == [] and diff["removed"] == []
        assert diff["changed"] == [{"id": TIP, "rules": True, "copy": True, "variants": False, "other": False}]
        history = await call(admin, "catalogs/history", {"app": "default"})
        assert history["current"] == 1
        assert [(v["version"], v["note"], v["actor"]) for v in history["versions"]] == [
            (2, "show it", "admin"),
            (1, "hide it", "admin"),
        ]

        # Once a version is published, catalog/reload no longer reads the file.
        reload = await admin.call("catalog/reload")
        assert reload["applied"] is False and "published catalog version 1" in reload["diagnostics"][0]["message"]

        actions = [(e["action"], e["app"]) for e in await audit(admin)]
        assert ("catalog.publish", "default") in actions and ("catalog.rollback", "default") in actions
        assert actions.count(("catalog.publish", "default")) == 2
        assert ("admin.signIn", None) in actions
        entries = [e for e in await audit(admin) if e["action"] == "catalog.rollback"]
        assert entries[0]["before"] == shown["digest"] and entries[0]["after"] == published["digest"]
        assert entries[0]["actor"] == "admin" and entries[0]["detail"] == {"version": 1}
        for session in (admin, *users):
            await session.close()

    asyncio.run(body())
    one.stop()
    two.stop()


def test_a_scheduled_publish_survives_a_node_restart_and_applies_once(hosted):
    one = hosted.node("sched-1", catalog=hosted.catalog)
    two = hosted.node("sched-2", catalog=hosted.catalog)

    async def body():
        admin = await Session.open(one.socket_path, ADMIN_TOKEN)
        before = (await call(admin, "catalogs/history", {"app": "default"}))["current"]
        target = await call(admin, "catalogs/publish", {"app": "default", "catalog": SHOWN, "note": "target"})
        version = target["version"]
        back = await call(admin, "catalogs/publish", {"app": "default", "catalog": HIDDEN, "note": "for now"})
        at = time.time() + 4
        scheduled = await call(admin, "catalogs/schedule", {"app": "default", "version": version, "at": at})
        assert scheduled["version"] == version and scheduled["schedule"] >= 1
        with pytest.raises(RpcError) as missing:
            await call(admin, "catalogs/schedule", {"app": "default", "version": 99, "at": at})
        assert missing.value.code == -32602
        await admin.close()
        assert before != version

        # Both nodes go down before the instant; one comes back after it.
        one.kill()
        two.kill()
        while time.time() < at + 0.5:
            await asyncio.sleep(0.1)
        assert hosted.query("SELECT version FROM tipsd.catalog_current WHERE app = 'default'").strip() == str(
            back["version"]
        )
        two.start()
        deadline = time.monotonic() + TIMEOUT
        while two.health()["hosted"]["catalog"] != target["digest"]:
            assert time.monotonic() < deadline, "the scheduled version never reached the restarted node"
            await asyncio.sleep(0.05)
        user = await Session.open(two.socket_path, hosted.token("carol"))
        status = await user.call("tips/status", {"ids": [TIP]})
        assert status["tips"][0]["shouldDisplay"] is True and status["tips"][0]["tip"]["title"] == "Alpha, again"
        assert hosted.query("SELECT version FROM tipsd.catalog_current WHERE app = 'default'").strip() == str(version)
        one.start()
        await asyncio.sleep(2.5)  # both nodes tick at least twice more: nothing applies the schedule again
        admin = await Session.open(two.socket_path, ADMIN_TOKEN)
        applied = [
            e
            for e in await audit(admin)
            if e["action"] == "catalog.scheduledPublish" and e["detail"].get("schedule") == scheduled["schedule"]
        ]
        assert len(applied) == 1 and applied[0]["detail"]["version"] == version
        assert [e["action"] for e in await audit(admin)].count("catalog.schedule") >= 1
        await user.close()
        await admin.close()

    asyncio.run(body())
    one.stop()
    two.stop()


def test_account_changes_are_audited_and_the_log_is_append_only(hosted):
    node = hosted.node("audit-1", catalog=hosted.catalog)

    async def body():
        user = await Session.open(node.socket_path, hosted.token("dave"))
        await user.call("events/donate", {"id": "x.y"})
        await user.close()
        admin = await Session.open(node.socket_path, ADMIN_TOKEN)
        exported = await admin.call("accounts/export", {"account": "dave"})
        await admin.call("accounts/import", {"account": "erin", "export": exported})
        await admin.call("accounts/delete", {"account": "dave"})
        wanted = {("account.export", "dave"), ("account.import", "erin"), ("account.delete", "dave")}
        deadline = time.monotonic() + TIMEOUT
        while True:
            entries = await audit(admin)
            if wanted <= {(e["action"], e["detail"].get("account")) for e in entries}:
                break
            assert time.monotonic() < deadline, f"not audited: {wanted}"
            await asyncio.sleep(0.1)
        # Import and delete are recorded in their own transaction: a refused import (erin holds state now) leaves none.
        with pytest.raises(RpcError):
            await admin.call("accounts/import", {"account": "erin", "export": exported})
        imports = [e for e in await audit(admin) if e["action"] == "account.import"]
        assert [e["detail"] for e in imports] == [{"account": "erin"}]
        ids = [e["id"] for e in entries]
        assert ids == sorted(ids) and len(set(ids)) == len(ids)
        page = await call(admin, "audit/list", {"after": ids[0], "limit": 1})
        assert [e["id"] for e in page["entries"]] == [ids[1]] and page["next"] == ids[1]
        await admin.close()

    asyncio.run(body())
    for sql in ("UPDATE tipsd.audit SET actor = 'mallory'", "DELETE FROM tipsd.audit", "TRUNCATE tipsd.audit"):
        with pytest.raises(PostgresError, match="append-only"):
            hosted.query(sql)
    assert int(hosted.query("SELECT count(*) FROM tipsd.audit WHERE actor = 'mallory'")) == 0
    node.stop()


def test_the_command_line_publishes_diffs_rolls_back_schedules_and_lists(hosted):
    node = hosted.node("cli-1", catalog=hosted.catalog)
    daemon = ["--socket", node.socket_path, "--token-file", str(node.token_file)]

    def tipsd(*words: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [tipsd_bin(), "catalog", *words, *daemon], capture_output=True, text=True, timeout=TIMEOUT
        )

    bad = hosted.directory / "bad.json"
    bad.write_text(json.dumps(BAD))
    refused = tipsd("publish", str(bad), "--note", "broken")
    assert refused.returncode == 1 and "lint error" in refused.stderr and "error: " in refused.stderr

    good = hosted.directory / "good.json"
    good.write_text(json.dumps({"tips": [{"id": TIP, "title": "From the command line"}]}))
    dry = tipsd("publish", str(good), "--dry-run")
    assert dry.returncode == 0 and json.loads(dry.stdout)["dryRun"] is True
    assert tipsd("publish", str(good.with_name("catalog.json")), "--note", "the file's").returncode == 0
    before = json.loads(tipsd("history").stdout)
    published = tipsd("publish", str(good), "--note", "cli")
    assert published.returncode == 0, published.stderr
    version = json.loads(published.stdout)["version"]
    history = json.loads(tipsd("history").stdout)
    assert history["current"] == version and len(history["versions"]) == len(before["versions"]) + 1
    assert history["versions"][0]["note"] == "cli"
    diff = json.loads(tipsd("diff", str(version - 1), str(version)).stdout)
    assert diff["to"] == version and diff["changed"][0]["id"] == TIP
    assert json.loads(tipsd("rollback", str(version - 1)).stdout) == {"version": version - 1}
    scheduled = json.loads(tipsd("schedule", str(version), "+3600").stdout)
    assert scheduled["version"] == version and scheduled["at"] > time.time() + 3000
    missing = tipsd("rollback", "999")
    assert missing.returncode == 1 and "no catalog version 999" in missing.stderr
    node.stop()


def test_a_version_made_current_without_a_notification_is_picked_up_by_the_periodic_check(hosted):
    node = hosted.node("net-1", catalog=hosted.catalog)

    async def body():
        admin = await Session.open(node.socket_path, ADMIN_TOKEN)
        published = await call(admin, "catalogs/publish", {"app": "default", "catalog": SHOWN, "note": "base"})
        stored = json.dumps({"tips": [{"id": TIP, "title": "Behind the fleet\u2019s back"}]})
        # Made current in PostgreSQL with no NOTIFY: as if the node's listener had been away when it happened.
        hosted.query(
            "INSERT INTO tipsd.catalog_versions (app, version, catalog, digest, note, actor) "
            f"VALUES ('default', {published['version'] + 1}, '{stored}', 'feedfacefeedface', 'quiet', 'test'); "
            f"UPDATE tipsd.catalog_current SET version = {published['version'] + 1} WHERE app = 'default'"
        )
        await until(lambda: node.health()["hosted"]["catalog"] == "feedfacefeedface", "the periodic check's switch")
        user = await Session.open(node.socket_path, hosted.token("frank"))
        status = await user.call("tips/status", {"ids": [TIP]})
        assert status["tips"][0]["tip"]["title"] == "Behind the fleet\u2019s back"
        await user.close()
        await admin.close()

    asyncio.run(body())
    node.stop()
