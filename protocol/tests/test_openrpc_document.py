"""The OpenRPC document: valid against the OpenRPC meta-schema, embedded in the daemon, complete, and self-consistent."""

import json
import re
import subprocess

import jsonschema
import pytest

import harness

DOC = json.loads(harness.OPENRPC_PATH.read_text())
SCHEMAS = harness.PROTOCOL / "schemas"


def meta_validator():
    meta = json.loads(harness.META_SCHEMA_PATH.read_text())
    jsonschema.Draft7Validator.check_schema(meta)
    return jsonschema.Draft7Validator(
        meta, registry=harness.schema_registry(), format_checker=jsonschema.Draft7Validator.FORMAT_CHECKER
    )


def test_document_validates_against_openrpc_meta_schema():
    problems = harness.errors_of(meta_validator(), DOC)
    assert not problems, "\n".join(problems)


def test_every_schema_in_the_document_is_a_valid_draft7_schema():
    for schema in DOC["components"]["schemas"].values():
        jsonschema.Draft7Validator.check_schema(schema)
    for path in SCHEMAS.glob("*.json"):
        jsonschema.Draft7Validator.check_schema(json.loads(path.read_text()))


def test_every_ref_resolves(contract):
    """Every $ref in the document and the schema files resolves (dangling refs would only fail at validation time)."""

    def walk(node, base):
        if isinstance(node, dict):
            if isinstance(node.get("$ref"), str):
                yield base, node["$ref"]
            for v in node.values():
                yield from walk(v, base)
        elif isinstance(node, list):
            for v in node:
                yield from walk(v, base)

    refs = list(walk(DOC, harness.OPENRPC_PATH))
    for path in SCHEMAS.glob("*.json"):
        refs += list(walk(json.loads(path.read_text()), path))
    assert refs
    for base, ref in refs:
        if ref == harness.META_SCHEMA_ID:
            continue  # rpc.discover's result: the OpenRPC meta-schema itself, resolved to the vendored copy
        contract.registry.resolver(base_uri=base.as_uri()).lookup(ref)  # raises if unresolvable


def test_embedded_copy_is_up_to_date():
    r = subprocess.run([str(harness.REPO / "scripts" / "embed-openrpc"), "--check"], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr


def test_rpc_discover_returns_exactly_the_document(daemon_factory):
    d = daemon_factory("stdio")
    c = d.connect()
    reply = c.request("rpc.discover")  # allowed before initialize
    assert reply["result"] == DOC, (
        "rpc.discover differs from protocol/openrpc.json: rebuild tipsd after "
        "scripts/embed-openrpc (TIPSD_BIN=" + harness.tipsd_bin() + ")"
    )


def test_methods_match_capabilities(daemon_factory):
    d = daemon_factory("socket")
    c = d.connect()
    caps = c.request("initialize", {"protocolVersion": "1.0", "clientInfo": {"name": "doc-test"}})["result"][
        "capabilities"
    ]
    documented = {m["name"] for m in DOC["methods"]}
    answered = set(caps["methods"])
    assert answered - documented == set(), f"answered but not documented: {sorted(answered - documented)}"
    assert documented - answered == set(), f"documented but not answered: {sorted(documented - answered)}"
    notes = {n["name"] for n in DOC["x-notifications"]}
    assert set(caps["notifications"]) == notes


def test_method_names_unique_and_notifications_marked():
    names = [m["name"] for m in DOC["methods"]]
    assert len(names) == len(set(names))
    for n in DOC["x-notifications"]:
        assert n["x-direction"] == "server-to-client"
        assert n["name"] not in names
    for m in DOC["methods"]:
        assert m["examples"], f"{m['name']}: no example"
        assert m["summary"]


def test_info_version_is_the_protocol_version(daemon_factory):
    d = daemon_factory("stdio")
    c = d.connect()
    r = c.request("initialize", {"protocolVersion": "1.0", "clientInfo": {"name": "doc-test"}})["result"]
    assert DOC["info"]["version"] == r["protocolVersion"]


@pytest.mark.parametrize("method", [m["name"] for m in DOC["methods"]])
def test_examples_validate_against_their_schemas(contract, method):
    m = contract.methods[method]
    names = [p["name"] for p in m["params"]]
    for example in m["examples"]:
        given = {p["name"]: p["value"] for p in example["params"]}
        assert set(given) <= set(names), f"{method} example {example['name']}: unknown params {set(given) - set(names)}"
        for i, p in enumerate(m["params"]):
            if p["name"] in given:
                problems = harness.errors_of(contract.param_validator(method, i), given[p["name"]])
                assert not problems, f"{method} example {example['name']} param {p['name']}: {problems}"
            else:
                assert not p.get("required"), f"{method} example {example['name']}: missing required {p['name']}"
        if not m.get("x-notification"):
            problems = harness.errors_of(contract.result_validator(method), example["result"]["value"])
            if method == "rpc.discover":
                continue  # abridged on purpose
            assert not problems, f"{method} example {example['name']} result: {problems}"


@pytest.mark.parametrize("name", [n["name"] for n in DOC["x-notifications"]])
def test_notification_examples_validate(contract, name):
    n = contract.notifications[name]
    for example in n["examples"]:
        problems = harness.errors_of(contract.notification_validator(name), example["params"])
        assert not problems, problems


# ---- tip, rule and catalog schemas


def schema_file_validator(name):
    """A validator for protocol/schemas/NAME, resolving its relative $refs like an editor would."""
    return jsonschema.Draft7Validator({"$ref": (SCHEMAS / name).as_uri()}, registry=harness.schema_registry())


def test_demo_catalog_validates():
    catalog = json.loads((harness.REPO / "catalog" / "demo.json").read_text())
    assert catalog["$schema"] == "../protocol/schemas/catalog.json"
    assert (harness.REPO / "catalog" / catalog["$schema"]).resolve() == (SCHEMAS / "catalog.json").resolve()
    problems = harness.errors_of(schema_file_validator("catalog.json"), catalog)
    assert not problems, problems


def client_test_tips():
    """Tip definitions used by the Python and TypeScript client tests (the ones meant to be valid)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "tipdefs", harness.REPO / "clients" / "python" / "tests" / "tipdefs.py"
    )
    tipdefs = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tipdefs)
    tips = [
        tipdefs.FILTER_TIP,
        tipdefs.filter_tip(rules=[]),
        tipdefs.plain_tip("a.tip"),
        tipdefs.event_tip("b.tip", "b", 2),
        tipdefs.plain_tip(
            "north.tip", rules=[{"event": "trail.visited", "where": {"region": "north"}, "count": {"gt": 3}}]
        ),
        tipdefs.plain_tip("login.tip", rules=[{"parameter": "isLoggedIn", "eq": True}]),
    ]
    # TypeScript suites (clients/typescript/test*/): FilterTip, LOGIN_TIP, NEVER_TIP, later.tip
    tips += [
        harness.FILTER_TIP,
        {"id": "login.tip", "title": "Sign in to sync", "rules": [{"parameter": "isLoggedIn", "eq": True}]},
        {"id": "never.tip", "title": "Never", "rules": [{"event": "never.happens", "count": {"gte": 1}}]},
        {"id": "later.tip", "title": "Later", "rules": [{"event": "later", "count": {"gte": 1}}]},
    ]
    return tips


def test_client_test_tips_validate():
    v = schema_file_validator("tip.json")
    for tip in client_test_tips():
        problems = harness.errors_of(v, tip)
        assert not problems, (tip["id"], problems)


RULES_OK = [
    {"event": "e", "count": {"gte": 3}},
    {"event": "e", "count": {"eq": 0}, "within": {"hours": 1.5}},
    {"event": "e", "count": {"gt": 1}, "where": {"region": "north"}, "largestGroupBy": "day"},
    {"parameter": "p", "eq": True},
    {"parameter": "p", "lt": 3.5},
    {"allOf": [{"parameter": "p", "ne": "x"}, {"not": {"event": "e", "count": {"lt": 2}}}]},
    {"anyOf": []},
    {"tip": "welcome.tip", "status": "invalidated"},
    {"tip": "welcome.tip", "status": "invalidated", "for": {"days": 1}},
    {"tip": "welcome.tip", "displayed": {"gte": 2}},
]
RULES_BAD = [
    {"tip": "welcome.tip"},  # neither status nor displayed
    {"tip": "welcome.tip", "status": "available"},
    {"tip": "welcome.tip", "displayed": {"gte": 1}, "for": {"days": 1}},  # for goes with status
    {"tip": "welcome.tip", "status": "invalidated", "displayed": {"gte": 1}},
    {"tip": "", "status": "invalidated"},
    {"event": "e", "count": {"gte ": 3}},  # the seed's typo
    {"event": "e", "count": {"gte": 3, "lt": 5}},  # two operators
    {"event": "e", "count": {"gte": -1}},
    {"event": "e", "count": {"gte": 3}, "within": {"fortnights": 1}},
    {"event": "", "count": {"gte": 3}},
    {"event": "e"},
    {"parameter": "p"},
    {"parameter": "p", "eq": [1]},
    {"event": "e", "parameter": "p", "count": {"eq": 1}},
    {"not": {"event": "e", "count": {"gte": 1}}, "extra": 1},
]


def test_rule_schema_accepts_and_rejects_like_the_daemon(daemon_factory):
    """The rule schema and the daemon's decoder agree on a sample of valid and invalid rules."""
    v = schema_file_validator("rule.json")
    d = daemon_factory("stdio")
    c = d.connect()
    c.request("initialize", {"protocolVersion": "1.0", "clientInfo": {"name": "rules"}})
    for i, rule in enumerate(RULES_OK + RULES_BAD):
        schema_ok = not list(v.iter_errors(rule))
        reply = c.request("tips/register", {"tips": [{"id": f"t{i}", "title": "T", "rules": [rule]}]})
        daemon_ok = "result" in reply
        assert schema_ok == daemon_ok == (rule in RULES_OK), (rule, schema_ok, reply)


# ---- params: the document's params[].name lists are what the daemon accepts


REQUEST_METHODS = [m["name"] for m in DOC["methods"] if not m.get("x-notification") and m["name"] != "initialize"]


def test_unknown_params_are_rejected_naming_the_documented_ones(daemon_factory, contract):
    """Every method but initialize rejects a param its document entry does not list, listing the ones it does."""
    d = daemon_factory("stdio")
    c = d.connect()
    c.request("initialize", {"protocolVersion": "1.0", "clientInfo": {"name": "params"}})
    for method in REQUEST_METHODS:
        names = sorted(p["name"] for p in contract.methods[method]["params"])
        expected = f"expected {', '.join(names)}" if names else "it takes no params"
        reply = c.request(method, {"zzUnknown": 1})
        assert reply.get("error", {}).get("code") == -32602, (method, reply)
        assert reply["error"]["message"] == f'{method}: unknown param "zzUnknown" ({expected})', (method, reply)


def test_params_read_by_request_types_are_documented(contract):
    """Static check of the Swift sources: each request type under Sources/TipsProtocol/Requests/ declares its
    params (`.required("id")`, `.optional("info")`) as the document does, and its decoder reads
    (`p.string("id")`, `p.optionalBool("invalidate")`, …) only params it declares; otherwise the daemon, which
    refuses undeclared params, would reject the very param it reads. (RegistryTests compares the declarations with
    this document from the Swift side.)"""
    requests = sorted((harness.REPO / "Sources" / "TipsProtocol" / "Requests").glob("*.swift"))
    checked = 0
    for path in requests:
        code = path.read_text()
        method = re.search(r'static let method = "([^"]+)"', code).group(1)
        declared = set(re.findall(r'\.(?:required|optional)\("([^"]+)"\)', code))
        documented = {p["name"] for p in contract.methods[method]["params"]}
        assert declared == documented, f"{path.name}: declares {sorted(declared)}, the document {sorted(documented)}"
        read = {name for accessor, name in re.findall(r'\bp\.(\w+)\("([^"]+)"', code) if accessor != "invalid"}
        assert read <= declared, f"{method} reads undeclared params {sorted(read - declared)}"
        checked += len(read)
    # The parsing above found the request types: one per method answered with a reply (initialize's included).
    assert len(requests) == len(REQUEST_METHODS) + 1 and checked >= 44


LOCALIZATIONS_OK = [
    {"ja": {"title": "T", "message": "M", "actions": {"a": "A"}}},
    {"zh-Hans": {}, "pt_BR": {"title": "T"}, "EN": {"message": None}},
    None,
]
LOCALIZATIONS_BAD = [
    {"ja": {"subtitle": "x"}},  # unknown key
    {"ja JP": {"title": "x"}},  # not a locale tag
    {"": {"title": "x"}},
    {"ja": None},
    {"ja": {"title": 1}},
    {"ja": {"actions": {"a": None}}},
    ["ja"],
]


def test_tip_schema_localizations_accept_and_reject_like_the_daemon(daemon_factory):
    """tip.json's `localizations` and the daemon's decoder agree (action ids being the tip's own is the daemon's
    check alone: a schema cannot express it)."""
    v = schema_file_validator("tip.json")
    d = daemon_factory("stdio")
    c = d.connect()
    c.request("initialize", {"protocolVersion": "1.0", "clientInfo": {"name": "localizations"}, "locale": "ja"})
    for i, localizations in enumerate(LOCALIZATIONS_OK + LOCALIZATIONS_BAD):
        tip = {"id": f"t{i}", "title": "T", "actions": [{"id": "a", "title": "A"}], "localizations": localizations}
        schema_ok = not list(v.iter_errors(tip))
        reply = c.request("tips/register", {"tips": [tip]})
        daemon_ok = "result" in reply
        assert schema_ok == daemon_ok == (localizations in LOCALIZATIONS_OK), (localizations, schema_ok, reply)
