"""A host built on the official Python SDK client (`mcp`), for the tests of gateway replicas
behind a load balancer: through URL, in the given mode, it makes 300 calls, answers 30
elicitations, lists 3 pages of tools, and waits for 10 updates of a resource (subscribed to
with `resources/subscribe` in legacy mode, on a `subscriptions/listen` stream in
2026-07-28), then prints what it saw as JSON: counts and every error.

usage: cluster_host.py MODE URL   (MODE: legacy | 2025-06-18 | 2026-07-28)

MODE 2025-06-18 is legacy mode offering 2025-06-18 at `initialize`, as a host on an SDK of
that revision would (this SDK offers its newest handshake revision otherwise).
"""

import asyncio
import json
import sys

import anyio
import mcp.client.session
import mcp_types as types
from mcp import Client

TICKING = "test://ticking-resource"

elicited = 0
updates = 0
errors = []


async def elicit(context, params):
    global elicited
    elicited += 1
    return types.ElicitResult(action="accept", content={"username": "Ada", "email": "ada@example.com"})


async def on_message(message):
    global updates
    n = getattr(message, "root", message)
    if getattr(n, "method", None) == "notifications/resources/updated":
        if getattr(n.params, "uri", None) == TICKING:
            updates += 1


async def attempt(what, f):
    try:
        r = await f()
        if getattr(r, "is_error", False):
            errors.append(f"{what}: isError {r.model_dump(mode='json')}")
        return r
    except Exception as e:  # every failure is what the test counts
        errors.append(f"{what}: {type(e).__name__}: {e}")
        return None


async def wait_for_updates(n, seconds):
    with anyio.move_on_after(seconds):
        while updates < n:
            await anyio.sleep(0.05)


async def main() -> None:
    global updates
    mode, url = sys.argv[1], sys.argv[2]
    if mode == "2025-06-18":
        mcp.client.session.LATEST_HANDSHAKE_VERSION = mode
        mode = "legacy"
    async with Client(url, mode=mode, elicitation_callback=elicit, message_handler=on_message) as client:
        calls = 0
        for _ in range(300):
            if await attempt("call", lambda: client.call_tool("test_simple_text", {})):
                calls += 1
        answered = 0
        for i in range(30):
            r = await attempt("elicitation", lambda: client.call_tool("test_elicitation", {"message": f"Your name? ({i})"}))
            if r is not None and "Ada" in json.dumps(r.model_dump(mode="json")):
                answered += 1
        pages = []
        cursor = None
        for _ in range(3):
            r = await attempt("list", lambda: client.list_tools(cursor=cursor))
            if r is None:
                break
            pages.append([t.name for t in r.tools])
            cursor = r.next_cursor
            if cursor is None:
                break
        if mode == "legacy":
            await attempt("subscribe", lambda: client.subscribe_resource(TICKING))
            await wait_for_updates(10, 10)
        else:
            async def listened():
                global updates
                async with client.listen(resource_subscriptions=[TICKING]) as sub:
                    with anyio.move_on_after(10):
                        async for event in sub:
                            if getattr(event, "uri", None) == TICKING:
                                updates += 1
                            if updates >= 10:
                                return
            await attempt("listen", listened)
        print(json.dumps({"protocolVersion": client.protocol_version, "calls": calls, "elicited": elicited,
                          "answered": answered, "pages": pages, "updates": updates, "errors": errors}))


if __name__ == "__main__":
    asyncio.run(main())
