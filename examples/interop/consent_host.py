"""A host built on the official Python SDK client (`mcp`), for the tests of upstreams that
act as each user by the user's own consent: it calls `desk__whoami` through the gateway as
the user whose bearer token it holds, and when the gateway asks the user to open a URL it
says so on stdout and waits for the test (the user's browser) to say it was opened, then
carries on the way its protocol version does:

- 2025-11-25 with URL mode: the call fails with -32042 (an `MCPError`, read as a
  `UrlElicitationRequiredError`); it waits for `notifications/elicitation/complete` and
  calls again.
- 2026-07-28 with URL mode: the call answers `input_required` with an
  `elicitation/create` in URL mode; the SDK's elicitation callback opens it and accepts,
  and the SDK retries the call itself.
- without URL mode (no elicitation callback, so no elicitation capability): the call
  answers an error result naming the link; it opens it and calls again.

Then it makes N more calls at once and prints what they said.

usage: consent_host.py URL VERSION url|none N   (bearer token in MCP_BEARER_TOKEN)
  VERSION: 2025-06-18 | 2025-11-25 | 2026-07-28

One JSON object a line on stdout:
  {"negotiated": V}                        connected at protocol version V
  {"open": URL, "elicitationId": ID?}      the user should open URL; then waits for a line
                                           {"opened": true} on stdin
  {"notified": ID}                         `notifications/elicitation/complete` came
  {"done": true, "first": T, "texts": [...], "errors": 0, "failures": [...]}
  {"error": "..."}                         anything went wrong (exit status 1)
"""

import json
import os
import sys
import traceback

import anyio
import mcp.client.session
import mcp_types as types
from mcp import Client, MCPError, UrlElicitationRequiredError
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

TOOL = "desk__whoami"
WAIT = 120

completed: dict[str, anyio.Event] = {}
elicited = 0


def say(o) -> None:
    sys.stdout.write(json.dumps(o) + "\n")
    sys.stdout.flush()


def completion(elicitation_id: str) -> anyio.Event:
    return completed.setdefault(elicitation_id, anyio.Event())


async def open_url(link: str, elicitation_id: str | None = None) -> None:
    """The user opens `link` (the test's browser) and says so on stdin."""
    say({"open": link} if elicitation_id is None else {"open": link, "elicitationId": elicitation_id})
    with anyio.fail_after(WAIT):
        line = await anyio.to_thread.run_sync(sys.stdin.readline, abandon_on_cancel=True)
    if not json.loads(line or "{}").get("opened"):
        raise RuntimeError(f"not opened: {line!r}")


async def elicit(context, params):
    global elicited
    if getattr(params, "mode", None) != "url":
        return types.ErrorData(code=-32602, message=f"not URL mode: {params}")
    elicited += 1
    if elicited > 1:
        return types.ErrorData(code=-32603, message=f"asked again: {params}")
    await open_url(params.url, params.elicitation_id)
    return types.ElicitResult(action="accept")


async def on_message(message) -> None:
    n = getattr(message, "root", message)
    if getattr(n, "method", None) == "notifications/elicitation/complete":
        elicitation_id = n.params.elicitation_id
        say({"notified": elicitation_id})
        completion(elicitation_id).set()


def text(r) -> str:
    return " ".join(b.text for b in r.content if getattr(b, "type", None) == "text")


def dumped(r) -> str:
    return json.dumps(r.model_dump(mode="json", by_alias=True, exclude_none=True))


async def main() -> None:
    url, version, url_arg, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    url_mode = url_arg == "url"
    if version == "2026-07-28":
        mode = version
    else:
        # Legacy mode offers the SDK's newest handshake revision; a host of an older one
        # offers that instead.
        mcp.client.session.LATEST_HANDSHAKE_VERSION = version
        mode = "legacy"
    http = create_mcp_http_client(headers={"Authorization": f"Bearer {os.environ['MCP_BEARER_TOKEN']}"})
    server = streamable_http_client(url, http_client=http)
    # With an elicitation callback this SDK declares both form and URL mode; without one,
    # no elicitation at all.
    callbacks = {"elicitation_callback": elicit} if url_mode else {}
    async with Client(server, mode=mode, message_handler=on_message, **callbacks) as client:
        say({"negotiated": client.protocol_version})

        async def whoami():
            with anyio.fail_after(WAIT):
                return await client.call_tool(TOOL, {})

        # The first call: consent is asked for, in this host's form.
        if url_mode and version == "2026-07-28":
            r = await whoami()
            if r.is_error:
                raise RuntimeError(f"first call: {dumped(r)}")
            first = text(r)
        elif url_mode:
            try:
                r = await whoami()
                raise RuntimeError(f"no -32042 but: {dumped(r)}")
            except MCPError as e:
                if e.code != -32042:
                    raise
                asked = UrlElicitationRequiredError.from_error(e.error)
            el = asked.elicitations[0]
            if el.mode != "url" or not el.elicitation_id:
                raise RuntimeError(f"elicitation: {asked.data}")
            done = completion(el.elicitation_id)
            await open_url(el.url, el.elicitation_id)
            with anyio.fail_after(WAIT):
                await done.wait()
            r = await whoami()
            if r.is_error:
                raise RuntimeError(f"after consent: {dumped(r)}")
            first = text(r)
        else:
            told = await whoami()
            said = text(told)
            if not told.is_error:
                raise RuntimeError(f"not an error result: {dumped(told)}")
            link = next((w for w in said.split() if "/connect/start?t=" in w), None)
            if link is None:
                raise RuntimeError(f"no link in: {said}")
            if "call again" not in said:
                raise RuntimeError(f"not told to call again: {said}")
            await open_url(link)
            r = await whoami()
            if r.is_error:
                raise RuntimeError(f"after consent: {dumped(r)}")
            first = text(r)

        # N calls at once.
        texts: list[str] = []
        failures: list[str] = []

        async def one() -> None:
            try:
                r = await whoami()
                if r.is_error:
                    failures.append(f"isError: {dumped(r)}")
                else:
                    texts.append(text(r))
            except Exception as e:  # every failure is what the test counts
                failures.append(f"{type(e).__name__}: {e}")

        async with anyio.create_task_group() as tg:
            for _ in range(n):
                tg.start_soon(one)
    say({"done": True, "first": first, "texts": texts, "errors": len(failures), "failures": failures})


if __name__ == "__main__":
    try:
        anyio.run(main)
    except BaseException as e:  # noqa: BLE001 - every failure is reported, then exit 1
        if isinstance(e, SystemExit):
            raise
        detail = getattr(e, "error", None)
        data = detail.model_dump(mode="json") if detail is not None else None
        say({"error": f"{type(e).__name__}: {e} {json.dumps(data)}", "trace": traceback.format_exc()})
        sys.exit(1)
