"""Cassettes without the CLI: scrubbing, the file format and its errors, folding a stream,
conversion to a script (and its TOML), and how a replay is compared with its recording."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from runtime.cassette.check import compare_replay
from runtime.cassette.file import CassetteError, CassetteWriter, fold_stream, load_cassette
from runtime.cassette.script import cassette_script, reply_of, script_toml
from runtime.cassette.scrub import Scrubber, Tally, env_secrets
from runtime.rehearsal import Reply, parse_script
from runtime.rehearsal.replies import Faults, TextItem, ThinkingItem, ToolUseItem
from runtime.rehearsal.sse import message_events

# One planted secret per pattern, each unlike the others (the test looks for every one).
PLANTED = {
    "anthropic-key": "sk-ant-api03-Zx9PLANTEDanthropic_KEY-0042",
    "openai-key": "sk-proj9PLANTEDopenaiKEY00000042",
    "aws-access-key": "AKIAPLANTED000000042",
    "github-token": "ghp_PLANTEDgithubTOKEN0000000000042",
    "slack-token": "xoxb-PLANTED-slack-0042",
    "private-key": (
        "-----BEGIN RSA PRIVATE KEY-----\nMIIPLANTEDkey0042\n-----END RSA PRIVATE KEY-----"
    ),
    "bearer-token": "Bearer PLANTEDbearer.token0042",
    "secret-assignment": "password=PLANTEDpassw0rd42",
}


def forms(secret: str) -> list[str]:
    """The raw secret and its JSON-escaped form (what a JSON file would hold)."""
    return [secret, json.dumps(secret)[1:-1]]


def test_every_pattern_is_scrubbed_and_the_tally_names_it_without_the_value() -> None:
    body = {
        "system": [{"type": "text", "text": f"role doc holds {PLANTED['anthropic-key']}"}],
        "messages": [
            {"role": "user", "content": [{"type": "tool_result", "content": value}]}
            for value in PLANTED.values()
        ],
    }
    tally = Tally()
    clean = Scrubber().json(body, tally, "body")
    text = json.dumps(clean) + json.dumps(tally.as_json()) + tally.summary()
    for name, secret in PLANTED.items():
        value = secret.split("=", 1)[-1].removeprefix("Bearer ")
        for form in forms(value):
            assert form not in text, name
        assert f"[scrubbed:{name}]" in json.dumps(clean), name
    assert tally.names["anthropic-key"] == 2
    assert "body.system[0].text" in tally.paths
    assert "password=[scrubbed:secret-assignment]" in json.dumps(clean)


def test_the_user_and_device_ids_of_a_request_are_replaced_whole() -> None:
    ids = '{"device_id":"5c08aa","account_uuid":"acc-1","session_id":"s-1"}'
    body = {"metadata": {"user_id": ids}, "model": "m", "user_id": "kept: not metadata"}
    tally = Tally()
    clean = Scrubber().json(body, tally, "0.request.body")
    assert clean == {"metadata": {"user_id": "[scrubbed:user-id]"}, "model": "m",
                     "user_id": "kept: not metadata"}  # fmt: skip
    assert tally.names == {"user-id": 1} and "0.request.body.metadata.user_id" in tally.paths
    assert "5c08aa" not in json.dumps(tally.as_json()) + tally.summary()


def test_literal_secrets_from_the_environment_are_scrubbed_whatever_their_shape() -> None:
    secrets = env_secrets({"MY_SERVICE_TOKEN": "plain-words-no-pattern", "PATH": "/usr/bin:/bin"})
    assert secrets == {"env:MY_SERVICE_TOKEN": "plain-words-no-pattern"}
    tally = Tally()
    out = Scrubber(secrets).text("x plain-words-no-pattern y", tally, "p")
    assert out == "x [scrubbed:env:MY_SERVICE_TOKEN] y"
    assert tally.names == {"env:MY_SERVICE_TOKEN": 1}


def test_credential_headers_are_dropped_and_other_values_scrubbed() -> None:
    tally = Tally()
    kept = Scrubber().headers(
        {
            "X-Api-Key": "anything",
            "Authorization": "Bearer x",
            "Cookie": "a=b",
            "Proxy-Authorization": "Basic y",
            "anthropic-auth-token": "z",
            "X-Note": PLANTED["github-token"],
            "anthropic-version": "2023-06-01",
        },
        tally,
        "h",
    )
    assert kept == {"x-note": "[scrubbed:github-token]", "anthropic-version": "2023-06-01"}
    assert tally.headers == {
        "x-api-key",
        "authorization",
        "cookie",
        "proxy-authorization",
        "anthropic-auth-token",
    }


def test_a_stream_folds_into_the_message_that_was_sent() -> None:
    reply = Reply(
        (
            ThinkingItem("think " * 30, "sig-9"),
            TextItem("a long answer " * 20),
            ToolUseItem("Bash", {"command": "ls -la", "n": [1, 2]}, "toolu_1"),
        )
    )
    usage = {"input_tokens": 5, "cache_read_input_tokens": 7}
    events = message_events(
        reply, message_id="m1", model="claude-x", usage=usage, output_tokens=9, chunk_chars=7
    )
    message, error = fold_stream(events)
    assert error is None
    assert message["content"] == [
        {"type": "thinking", "thinking": "think " * 30, "signature": "sig-9"},
        {"type": "text", "text": "a long answer " * 20},
        {
            "type": "tool_use",
            "id": "toolu_1",
            "name": "Bash",
            "input": {"command": "ls -la", "n": [1, 2]},
        },
    ]
    assert message["stop_reason"] == "tool_use"
    assert message["usage"] == {**usage, "output_tokens": 9}
    overloaded = message_events(
        Reply.failure("overloaded", in_stream=True),
        message_id="m",
        model="x",
        usage={},
        output_tokens=1,
    )
    assert fold_stream(overloaded)[1] == {"type": "overloaded_error", "message": "Overloaded"}


def write(path: Path, *lines: Any) -> Path:
    path.write_text("".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines))
    return path


HEAD = {"cassette": 1, "instance": "eng", "upstream": "http://127.0.0.1:1"}
REQUEST = {"method": "POST", "path": "/v1/messages", "headers": {}, "body": {"messages": []}}
ANSWER = {"status": 200, "stream": True, "message": {"content": [{"type": "text", "text": "hi"}]}}
EXCHANGE = {"exchange": 0, "request": REQUEST, "response": ANSWER}


@pytest.mark.parametrize(
    ("lines", "expected"),
    [
        ([HEAD, '{"exchange": 0, "request": {"meth'], "line 2: not valid JSON"),
        ([{**HEAD, "cassette": 2}], "line 1: cassette version 2 is not supported"),
        ([{"instance": "eng"}], "line 1: field 'cassette': Field required"),
        ([HEAD, {"exchange": 0, "response": ANSWER}], "line 2: field 'request': Field required"),
        (
            [HEAD, {**EXCHANGE, "response": {"stream": True}}],
            "line 2: field 'response.status': Field required",
        ),
        ([HEAD, {**EXCHANGE, "exchange": 3}], "line 2: field 'exchange': 3 out of order"),
        (
            [HEAD, EXCHANGE, {"end": True, "requests": 5, "scrubbed": {}}],
            "line 3: field 'requests'",
        ),
        ([HEAD, {"what": 1}], "line 2: not an input, exchange or end line"),
        ([HEAD, [1, 2]], "line 2: not a JSON object"),
        ([], "empty"),
    ],
)
def test_a_bad_cassette_is_refused_naming_the_file_and_line(
    tmp_path: Path, lines: list[Any], expected: str
) -> None:
    path = write(tmp_path / "bad.jsonl", *lines)
    with pytest.raises(CassetteError) as caught:
        load_cassette(path)
    message = str(caught.value)
    assert message.startswith(f"{path}: "), message
    assert expected in message
    assert "\n" not in message


def test_the_writer_appends_as_it_goes_and_a_cut_recording_still_loads(tmp_path: Path) -> None:
    (tmp_path / "out").mkdir()
    path = tmp_path / "out" / "c.jsonl"
    writer = CassetteWriter(path, instance="eng", upstream="http://u")
    writer.add_input("hello")
    writer.add_exchange(REQUEST, ANSWER)
    cut = load_cassette(path)  # read while "still recording": everything so far is there
    assert cut.inputs == ("hello",) and len(cut.exchanges) == 1 and cut.scrubbed is None
    writer.finish({"headers": ["x-api-key"], "patterns": {}, "paths": []})
    done = load_cassette(path)
    assert done.scrubbed == {"headers": ["x-api-key"], "patterns": {}, "paths": []}
    assert [p.name for p in path.parent.iterdir()] == ["c.jsonl"]  # no temporary file left


def test_the_script_toml_loads_back_to_the_same_script(tmp_path: Path) -> None:
    tricky = 'quote " backslash \\ newline \n tab \t unicode é 😀 del \x7f'
    answers = [
        {
            "content": [{"type": "thinking", "thinking": tricky, "signature": "s"}],
            "stop_reason": "end_turn",
        },
        {
            "content": [
                {"type": "text", "text": tricky},
                {
                    "type": "tool_use",
                    "id": "toolu_9",
                    "name": "Write",
                    "input": {"file_path": "a b.txt", "odd key": {"n": [1, 2.5, True], "e": {}}},
                },
            ],
            "stop_reason": "tool_use",
        },
    ]
    lines: list[Any] = [HEAD]
    for i, message in enumerate(answers):
        lines.append({**EXCHANGE, "exchange": i, "response": {**ANSWER, "message": message}})
    error = {"type": "error", "error": {"type": "overloaded_error", "message": "Busy"}}
    lines.append({**EXCHANGE, "exchange": 2, "response": {"status": 529, "body": error}})
    side = {**REQUEST, "body": {"output_config": {"format": {"type": "json_schema", "schema": {}}}}}
    lines.append({"exchange": 3, "request": side, "response": ANSWER})
    cassette = load_cassette(write(tmp_path / "c.jsonl", *lines))
    script = cassette_script(cassette, "my panel")
    rules = script.panels["my panel"].rules
    assert len(rules) == 3  # the side request is answered by the server, not a rule
    assert rules[2].reply == Reply(error="overloaded", error_message="Busy")
    assert rules[1].reply.content[1] == ToolUseItem(
        "Write", {"file_path": "a b.txt", "odd key": {"n": [1, 2.5, True], "e": {}}}, "toolu_9"
    )
    assert parse_script(script_toml(cassette, "my panel")) == script
    assert script.panels["my panel"].strict


def test_an_in_stream_error_and_an_unservable_block(tmp_path: Path) -> None:
    in_stream = {**ANSWER, "error": {"type": "overloaded_error", "message": "Overloaded"}}
    odd = {**ANSWER, "message": {"content": [{"type": "server_tool_use", "name": "web"}]}}
    path = write(
        tmp_path / "c.jsonl",
        HEAD,
        {**EXCHANGE, "response": in_stream},
        {**EXCHANGE, "exchange": 1, "response": odd},
    )
    cassette = load_cassette(path)
    first = reply_of(cassette, cassette.exchanges[0])
    assert first.error == "overloaded" and first.faults == Faults(error_in_stream=True)
    with pytest.raises(CassetteError, match=r"c\.jsonl: exchange 1: .*'server_tool_use'"):
        reply_of(cassette, cassette.exchanges[1])


def body(role_doc: str, *results: tuple[str, bool, str]) -> dict[str, Any]:
    blocks = [
        {"type": "tool_result", "tool_use_id": i, "is_error": e, "content": t}
        for i, e, t in results
    ]
    return {
        "model": "m",
        "system": [{"type": "text", "text": role_doc}],
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "Today's date is 2026-01-01."}]},
            {"role": "user", "content": blocks or "go"},
        ],
    }


def test_the_replay_report_names_the_first_differing_request_and_tool_decision() -> None:
    answers = [{"content": [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {}}]}, {}]
    recorded = [body("Role A"), body("Role A", ("t1", False, "ok"))]
    same = [body("Role A"), body("Role A", ("t1", False, "ok"))]
    report = compare_replay(recorded, answers, same, Scrubber())
    assert report.identical
    assert report.lines() == ["requests: all 2 match the recording", "tool decisions: 1/1 the same"]
    # Another day: the date the CLI states is not a difference.
    later = [json.loads(json.dumps(b).replace("2026-01-01", "2027-05-05")) for b in same]
    assert compare_replay(recorded, answers, later, Scrubber()).identical

    changed = [body("Role B"), body("Role B", ("t1", True, "Permission denied: not in lane"))]
    report = compare_replay(recorded, answers, changed, Scrubber())
    assert not report.identical and report.diff is not None
    assert report.diff.index == 0 and report.diff.divergence is not None
    assert report.diff.divergence.unit == "system[0]"
    assert report.diff.divergence.previous.startswith(
        "A"
    ) and report.diff.divergence.current.startswith("B")
    lines = report.lines()
    assert lines[0].startswith("requests: request 0 differs from the recording at byte ")
    assert lines[1] == "tool decisions: 0/1 the same"
    assert "recorded allowed; replayed refused: 'Permission denied: not in lane'" in lines[2]

    short = compare_replay(recorded, answers, same[:1], Scrubber())
    assert short.diff is not None and "request 1 never came" in short.diff.describe()
    assert "tool decisions: 0/1 the same" in short.lines()


def test_the_replay_is_scrubbed_before_it_is_compared() -> None:
    secret = PLANTED["anthropic-key"]
    recorded = [Scrubber().json(body(f"key {secret}"), Tally(), "b")]
    replay = [body(f"key {secret}")]
    assert compare_replay(recorded, [{}], replay, Scrubber()).identical


@pytest.mark.anyio
async def test_the_relay_passes_a_stream_on_as_it_arrives_and_records_it_scrubbed(
    anyio_backend: str,
) -> None:
    """The upstream sends one event, then waits until the client has seen it through the
    relay: a relay that buffered the answer would never deliver it (the test times out)."""
    import anyio
    import anyio.abc
    import httpx

    from runtime.cassette.relay import Credential, open_relay

    first_seen = anyio.Event()
    heard: list[bytes] = []
    events = message_events(
        Reply.text(f"secret {PLANTED['github-token']} here"),
        message_id="m1", model="x", usage={"input_tokens": 3}, output_tokens=2,
    )  # fmt: skip
    frames = [f"data: {json.dumps(e)}\n\n".encode() for e in events]

    def chunk(data: bytes) -> bytes:
        return f"{len(data):x}\r\n".encode() + data + b"\r\n"

    async def upstream(stream: anyio.abc.SocketStream) -> None:
        async with stream:
            request = b""
            while b"\r\n\r\n" not in request:
                request += await stream.receive()
            heard.append(request)
            head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
            await stream.send(f"{head}transfer-encoding: chunked\r\n\r\n".encode())
            await stream.send(chunk(frames[0]))
            await first_seen.wait()
            await stream.send(b"".join(chunk(f) for f in frames[1:]) + b"0\r\n\r\n")

    recorded: list[tuple[dict[str, Any], dict[str, Any]]] = []
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1")
    port = listener.extra(anyio.abc.SocketAttribute.local_port)
    with anyio.fail_after(60):
        async with listener, anyio.create_task_group() as tg:
            tg.start_soon(listener.serve, upstream)
            key = Credential("sk-ant-api03-REALkeyPLANTED000042")
            record = lambda req, resp: recorded.append((req, resp))  # noqa: E731
            async with (
                open_relay(f"http://127.0.0.1:{port}", key, record) as relay,
                httpx.AsyncClient(timeout=50) as client,
            ):
                headers = {"x-api-key": "sk-ant-dummy-for-the-cli", "x-note": "n"}
                body = {"model": "x", "stream": True, "messages": []}
                url = f"{relay.base_url}/v1/messages?beta=true"
                got = b""
                async with client.stream("POST", url, headers=headers, json=body) as answer:
                    async for part in answer.aiter_bytes():
                        got += part
                        if b"message_start" in got:
                            first_seen.set()
            tg.cancel_scope.cancel()
    assert got == b"".join(frames)  # what the CLI gets is what the upstream sent
    (request,) = heard
    assert b"x-api-key: sk-ant-api03-REALkeyPLANTED000042" in request
    assert b"dummy" not in request
    ((req, resp),) = recorded
    assert req["path"] == "/v1/messages?beta=true" and req["headers"]["x-note"] == "n"
    assert "x-api-key" not in req["headers"]
    assert resp["message"]["content"] == [
        {"type": "text", "text": "secret [scrubbed:github-token] here"}
    ]
    assert relay.tally.headers == {"x-api-key"}
