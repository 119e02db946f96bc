"""Framing unit tests (no server)."""

import asyncio

import pytest

from tipsd_client.errors import TipsdProtocolError
from tipsd_client.transport import ContentLengthFramer, NewlineFramer, make_framer, normalize_framing


def feed(data: bytes, eof: bool = True) -> asyncio.StreamReader:
    r = asyncio.StreamReader()
    r.feed_data(data)
    if eof:
        r.feed_eof()
    return r


def read_all(framer, data: bytes):
    async def go():
        reader = feed(data)
        out = []
        while True:
            m = await framer.read(reader)
            if m is None:
                return out
            out.append(m)

    return asyncio.run(go())


def test_newline_roundtrip_blank_lines_and_crlf():
    f = NewlineFramer()
    data = f.encode(b'{"a":1}') + b"\n\r\n" + b'{"b":2}\r\n' + b'{"c":3}'
    assert read_all(f, data) == [b'{"a":1}', b'{"b":2}', b'{"c":3}']


def test_newline_rejects_embedded_newline():
    with pytest.raises(ValueError):
        NewlineFramer().encode(b'{"a":\n1}')


def test_content_length_roundtrip_with_extra_headers():
    f = ContentLengthFramer()
    body = '{"x":"é"}'.encode()
    assert f.encode(body) == b"Content-Length: %d\r\n\r\n" % len(body) + body
    data = (
        f.encode(body) + b'Content-Type: application/vscode-jsonrpc; charset=utf-8\r\ncontent-length: 7\r\n\r\n{"y":2}'
    )
    assert read_all(f, data) == [body, b'{"y":2}']


def test_content_length_truncated_body_is_protocol_error():
    with pytest.raises(TipsdProtocolError):
        read_all(ContentLengthFramer(), b"Content-Length: 10\r\n\r\n{}")


def test_content_length_missing_header_is_protocol_error():
    with pytest.raises(TipsdProtocolError):
        read_all(ContentLengthFramer(), b"X-Other: 1\r\n\r\n{}")


def test_framing_names():
    assert normalize_framing("newline") == "newline"
    assert normalize_framing("contentLength") == "content-length"
    assert normalize_framing("content_length") == "content-length"
    assert make_framer("lsp").name == "content-length"
    with pytest.raises(ValueError):
        normalize_framing("xml")
