"""`tipsd lsp` (issue #16) driven by a real LSP client: pytest-lsp (PyPI, on pygls) against the built binary.

Initialize and shutdown, diagnostics for a typo'd event at the right range, completion of declared events, hover,
go to definition, the "did you mean" quick fix, an incremental change that fixes the typo, positions in UTF-16 code
units on lines with Japanese and emoji (and CRLF line breaks), a malformed document, `exit` without `shutdown`, and
hover's live value from a running daemon.

No timing assumptions: every wait is for a condition (a reply, diagnostics that satisfy a predicate, the process
exiting) under harness.TIMEOUT, which only guards against a hang. Every server gets `--socket` pointing at a path
with no daemon (or at the test's own daemon), so a daemon someone runs on this machine's default socket changes
nothing.
"""

import asyncio
import json
import pathlib

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

import harness

PUBLISH = types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS
NO_DAEMON = "/nonexistent/tipsd-lsp-tests.sock"

# CRLF line breaks, and Japanese and emoji (🔍 and ✨ outside and inside the BMP) before the typo on its line.
CATALOG = "\r\n".join(
    [
        '{"events": [{"id": "search.opened", "description": "The search screen appeared."},',
        '            {"id": "filter.used", "description": "The user applied the results filter."}],',
        ' "tips": [{"id": "filter.tip", "title": "絞り込めます 🔍✨", "rules": [{"event": "serach.opened", "count": {"gte": 3}, "within": {"days": 1}},',
        '          {"event": "filter.used", "count": {"eq": 0}}]},',
        '          {"id": "map.tip", "title": "地図 🗺️", "rules": [{"event": "filter.used", "count": {"gte": 1}}]}],',
        ' "groups": [{"id": "main", "priority": "ordered", "tips": ["filter.tip", "map.tip"]}]}',
        "",
    ]
)


def position(text: str, needle: str, occurrence: int = 0, offset: int = 0) -> types.Position:
    """The LSP position (UTF-16 code units) of the `occurrence`-th `needle` in `text`, plus `offset` code points."""
    index = -1
    for _ in range(occurrence + 1):
        index = text.index(needle, index + 1)
    index += offset
    before = text[:index].replace("\r\n", "\n")
    line = before.count("\n")
    column = before[before.rfind("\n") + 1 :]
    return types.Position(line=line, character=len(column.encode("utf-16-le")) // 2)


def span(text: str, needle: str, occurrence: int = 0) -> types.Range:
    start = position(text, needle, occurrence)
    end = position(text, needle, occurrence, offset=len(needle))
    return types.Range(start=start, end=end)


def config(*args: str) -> ClientServerConfig:
    return ClientServerConfig(server_command=[harness.tipsd_bin(), "lsp", *args])


@pytest_lsp.fixture(config=config("--socket", NO_DAEMON))
async def client(lsp_client: LanguageClient):
    await lsp_client.initialize_session(types.InitializeParams(capabilities=client_capabilities("visual-studio-code")))
    yield
    await lsp_client.shutdown_session()


async def diagnostics_where(client: LanguageClient, uri: str, predicate):
    """The document's latest diagnostics, once they satisfy `predicate`."""
    while True:
        current = client.diagnostics.get(uri)
        if current is not None and predicate(current):
            return current
        # Registered before any await: a publication cannot slip in between the check and the wait.
        waiter = client.protocol.wait_for_notification_async(PUBLISH)
        await asyncio.wait_for(waiter, harness.TIMEOUT)


def with_code(code):
    return lambda diagnostics: any(d.code == code for d in diagnostics)


def without_code(code):
    return lambda diagnostics: all(d.code != code for d in diagnostics)


def open_document(client: LanguageClient, uri: str, text: str, version: int = 1):
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(uri=uri, language_id="json", version=version, text=text)
        )
    )


def unsaved_uri(tmp_path: pathlib.Path, name: str = "catalog.json") -> str:
    """A file URI whose file does not exist: the buffer is all there is."""
    return (tmp_path / name).as_uri()


# ---------------------------------------------------------------------------------------------------------------
# Lifecycle


async def start(*args: str) -> LanguageClient:
    return await config(*args).start()


async def stop(client: LanguageClient):
    """pygls' stop() waits for the server to exit: after a failed assertion it may still be running."""
    if client._server is not None and client._server.returncode is None:
        client._server.kill()
    await asyncio.wait_for(client.stop(), harness.TIMEOUT)


@pytest.mark.asyncio
async def test_initialize_advertises_the_features_and_shutdown_exits_zero():
    client = await start("--socket", NO_DAEMON)
    try:
        result = await asyncio.wait_for(
            client.initialize_session(types.InitializeParams(capabilities=client_capabilities("visual-studio-code"))),
            harness.TIMEOUT,
        )
        capabilities = result.capabilities
        assert capabilities.position_encoding == types.PositionEncodingKind.Utf16
        assert capabilities.text_document_sync.change == types.TextDocumentSyncKind.Incremental
        assert list(capabilities.completion_provider.trigger_characters) == ['"', ":"]
        assert capabilities.hover_provider and capabilities.definition_provider
        assert list(capabilities.code_action_provider.code_action_kinds) == [types.CodeActionKind.QuickFix]
        assert result.server_info.name == "tipsd"
        await asyncio.wait_for(client.shutdown_session(), harness.TIMEOUT)  # shutdown, exit, wait for the process
        assert client._server.returncode == 0
    finally:
        await stop(client)


@pytest.mark.asyncio
async def test_exit_without_shutdown_exits_one():
    client = await start("--socket", NO_DAEMON)
    try:
        await asyncio.wait_for(
            client.initialize_session(types.InitializeParams(capabilities=types.ClientCapabilities())), harness.TIMEOUT
        )
        client.exit(None)
        assert await asyncio.wait_for(client._server.wait(), harness.TIMEOUT) == 1
    finally:
        await stop(client)


# ---------------------------------------------------------------------------------------------------------------
# Diagnostics, completion, hover, definition, code actions


@pytest.mark.asyncio
async def test_a_typoed_event_is_marked_at_its_utf16_range(client: LanguageClient, tmp_path):
    uri = unsaved_uri(tmp_path)
    open_document(client, uri, CATALOG)
    diagnostics = await diagnostics_where(client, uri, with_code("undeclared-event"))
    typo = next(d for d in diagnostics if d.code == "undeclared-event")
    assert typo.range == span(CATALOG, '"serach.opened"')
    # Line 2, after 絞り込めます (6 units), 🔍 (2 units: a surrogate pair) and ✨ (1 unit).
    assert typo.range.start == types.Position(line=2, character=74)
    assert typo.severity == types.DiagnosticSeverity.Error and typo.source == "tipsd"
    assert 'did you mean "search.opened"?' in typo.message
    assert any(d.code == "no-removal" and d.severity == types.DiagnosticSeverity.Warning for d in diagnostics)


@pytest.mark.asyncio
async def test_completion_lists_the_declared_events(client: LanguageClient, tmp_path):
    uri = unsaved_uri(tmp_path)
    open_document(client, uri, CATALOG)
    await diagnostics_where(client, uri, with_code("undeclared-event"))
    result = await client.text_document_completion_async(
        types.CompletionParams(
            text_document=types.TextDocumentIdentifier(uri=uri), position=position(CATALOG, "serach.opened", offset=3)
        )
    )
    assert [item.label for item in result.items] == ["search.opened", "filter.used"]
    assert result.items[0].text_edit.range == span(CATALOG, "serach.opened")
    assert result.items[0].detail == "The search screen appeared."
    # Keys inside a rule's count: the comparison operators.
    result = await client.text_document_completion_async(
        types.CompletionParams(
            text_document=types.TextDocumentIdentifier(uri=uri), position=position(CATALOG, '{"gte": 3}', offset=2)
        )
    )
    assert [item.label for item in result.items] == ["eq", "ne", "lt", "lte", "gt", "gte"]


@pytest.mark.asyncio
async def test_hover_explains_the_rule_and_the_event(client: LanguageClient, tmp_path):
    uri = unsaved_uri(tmp_path)
    open_document(client, uri, CATALOG)
    at = types.TextDocumentIdentifier(uri=uri)
    hover = await client.text_document_hover_async(
        types.HoverParams(text_document=at, position=position(CATALOG, '"within"'))
    )
    assert hover.contents.kind == types.MarkupKind.Markdown
    assert hover.contents.value == ("Holds when `serach.opened` was donated at least 3 times within the last 1 day.")
    rule = '{"event": "serach.opened", "count": {"gte": 3}, "within": {"days": 1}}'
    assert hover.range == span(CATALOG, rule)
    hover = await client.text_document_hover_async(
        types.HoverParams(text_document=at, position=position(CATALOG, "filter.used"))
    )
    assert hover.contents.value == "`filter.used`: The user applied the results filter."
    hover = await client.text_document_hover_async(
        types.HoverParams(text_document=at, position=position(CATALOG, '"eq": 0'))
    )
    assert hover.contents.value == "Holds when `filter.used` was never donated."


@pytest.mark.asyncio
async def test_go_to_definition_of_an_event_and_a_group_member(client: LanguageClient, tmp_path):
    uri = unsaved_uri(tmp_path)
    open_document(client, uri, CATALOG)
    at = types.TextDocumentIdentifier(uri=uri)
    # From the event of map.tip's rule (after 地図 🗺️ on its line) to its declaration.
    location = await client.text_document_definition_async(
        types.DefinitionParams(text_document=at, position=position(CATALOG, "filter.used", occurrence=2, offset=4))
    )
    assert location.uri == uri
    assert location.range == span(CATALOG, '"filter.used"')
    # From a group's member to the tip.
    location = await client.text_document_definition_async(
        types.DefinitionParams(text_document=at, position=position(CATALOG, '"map.tip"]'))
    )
    assert location.range == span(CATALOG, '"map.tip"')


@pytest.mark.asyncio
async def test_the_quick_fix_and_an_incremental_change_clear_the_typo(client: LanguageClient, tmp_path):
    uri = unsaved_uri(tmp_path)
    open_document(client, uri, CATALOG)
    diagnostics = await diagnostics_where(client, uri, with_code("undeclared-event"))
    typo = next(d for d in diagnostics if d.code == "undeclared-event")
    actions = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=typo.range,
            context=types.CodeActionContext(diagnostics=[typo]),
        )
    )
    assert [a.title for a in actions] == ['Change to "search.opened"']
    assert actions[0].kind == types.CodeActionKind.QuickFix
    edit = actions[0].edit.changes[uri][0]
    assert edit.range == typo.range and edit.new_text == '"search.opened"'
    # Apply the fix as an editor would: an incremental change of that range (UTF-16 positions).
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
            content_changes=[types.TextDocumentContentChangePartial(range=edit.range, text=edit.new_text)],
        )
    )
    await diagnostics_where(client, uri, without_code("undeclared-event"))
    # Another incremental edit breaks it again: the typo comes back at the same place.
    fixed = CATALOG.replace("serach", "search")
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=3),
            content_changes=[
                types.TextDocumentContentChangePartial(
                    range=span(fixed, "search.opened", occurrence=1), text="search.openned"
                )
            ],
        )
    )
    diagnostics = await diagnostics_where(client, uri, with_code("undeclared-event"))
    assert next(d for d in diagnostics if d.code == "undeclared-event").range.start == typo.range.start


@pytest.mark.asyncio
async def test_a_malformed_document_gets_a_diagnostic_and_the_server_keeps_serving(client: LanguageClient, tmp_path):
    uri = unsaved_uri(tmp_path)
    text = '{"tips": [\r\n  {"id": "日本.tip", "title": 😀 }\r\n]}'
    open_document(client, uri, text)
    diagnostics = await diagnostics_where(client, uri, with_code("json"))
    assert len(diagnostics) == 1
    assert diagnostics[0].range == span(text, "😀")  # two UTF-16 units
    assert diagnostics[0].range.end.character - diagnostics[0].range.start.character == 2
    # Completion while the JSON is broken still reads the text around the cursor.
    result = await client.text_document_completion_async(
        types.CompletionParams(
            text_document=types.TextDocumentIdentifier(uri=uri), position=position(text, '{"id"', offset=1)
        )
    )
    assert "rules" in [item.label for item in result.items]
    # A full-text change to valid JSON clears it.
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=text.replace("😀", '"😀"'))],
        )
    )
    await diagnostics_where(client, uri, without_code("json"))


@pytest.mark.asyncio
async def test_a_message_file_is_checked_against_its_catalog(client: LanguageClient, tmp_path):
    (tmp_path / "messages").mkdir()
    (tmp_path / "app.json").write_text(
        json.dumps({"locales": ["en", "ja"], "tips": [{"id": "filter.tip", "title": "Narrow it down"}]})
    )
    uri = (tmp_path / "messages" / "ja.json").as_uri()
    text = '{"tipkit": {\n  "filter.tip.title": "絞り込み🔍",\n  "filter.tip.nonsense": "😀"\n}}'
    open_document(client, uri, text)
    diagnostics = await diagnostics_where(client, uri, with_code("extra-message-key"))
    assert next(d for d in diagnostics if d.code == "extra-message-key").range == span(text, '"😀"')


# ---------------------------------------------------------------------------------------------------------------
# Hover's live value from a running daemon


@pytest.mark.asyncio
async def test_hover_shows_the_live_value_from_a_running_daemon(daemon_factory, tmp_path):
    catalog = CATALOG.replace("serach", "search")
    path = tmp_path / "live.json"
    path.write_text(catalog)
    daemon = daemon_factory("socket", "--catalog", str(path))
    connection = daemon.connect()
    connection.request("initialize", {"protocolVersion": "1.1", "clientInfo": {"name": "test"}})
    for _ in range(3):
        connection.request("events/donate", {"id": "search.opened"})
    client = await start("--socket", daemon.socket_path)
    try:
        await asyncio.wait_for(
            client.initialize_session(types.InitializeParams(capabilities=client_capabilities("visual-studio-code"))),
            harness.TIMEOUT,
        )
        uri = path.as_uri()
        open_document(client, uri, catalog)
        hover = await asyncio.wait_for(
            client.text_document_hover_async(
                types.HoverParams(
                    text_document=types.TextDocumentIdentifier(uri=uri), position=position(catalog, '"gte": 3')
                )
            ),
            harness.TIMEOUT,
        )
        value = hover.contents.value
        assert value.startswith("Holds when `search.opened` was donated at least 3 times within the last 1 day.")
        assert f"**Live** (tipsd at `{daemon.socket_path}`): this rule **holds**" in value
        assert "`filter.tip`: shouldDisplay" in value
        await asyncio.wait_for(client.shutdown_session(), harness.TIMEOUT)
    finally:
        await stop(client)
        connection.close()
