"""The MCP server through a real MCP client session over stdio (the `mcp` package's client).

The server is the installed `evoclaw-memory mcp` command in a subprocess, exactly as a desktop
MCP host starts it; nothing here calls the tool functions directly.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import sys
from pathlib import Path

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from evoclaw_memory import Memory


def script() -> str:
    found = Path(sys.executable).parent / "evoclaw-memory"
    return str(found) if found.exists() else (shutil.which("evoclaw-memory") or "evoclaw-memory")


def is_error(result) -> bool:
    return bool(getattr(result, "is_error", getattr(result, "isError", False)))


def text_of(result) -> str:
    return "".join(getattr(block, "text", "") for block in result.content)


def data_of(result) -> dict:
    """A tool's structured result (or its JSON text, for SDKs without structured output)."""
    assert not is_error(result), text_of(result)
    structured = getattr(result, "structured_content", getattr(result, "structuredContent", None))
    return structured if structured is not None else json.loads(text_of(result))


def resource_text(result) -> str:
    return "".join(getattr(c, "text", "") for c in result.contents)


def run_session(home: Path, agent: str, body, timeout: float = 60.0, args=(), errlog=None):
    """`body(session)` against `evoclaw-memory mcp --agent-id AGENT *args` over stdio; the
    server's stderr (its log) goes to `errlog` (a file) when given."""
    params = StdioServerParameters(command=script(), args=["mcp", "--agent-id", agent, *args],
                                   env={"EVOCLAW_HOME": str(home), "EVOCLAW_ENCRYPTION": "off"})

    async def main():
        async with stdio_client(params, errlog=errlog or sys.stderr) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                return await body(session)

    return asyncio.run(asyncio.wait_for(main(), timeout))


def test_tools_and_resources_over_a_real_stdio_session(home):
    async def body(session):
        tools = {t.name for t in (await session.list_tools()).tools}
        assert {"get_context", "retrieve", "remember", "end_conversation", "update_hot",
                "show_tree", "sync", "sync_status"} <= tools

        stored = data_of(await session.call_tool(
            "remember", {"text": "Biscuit the beagle is allergic to chicken",
                         "category": "home/pets/biscuit", "importance": 0.8,
                         "urls": ["https://vet.example/biscuit"]}))
        assert stored["status"] == "stored" and stored["fact"]["category"] == "home/pets/biscuit"
        again = data_of(await session.call_tool(
            "remember", {"text": "Biscuit the beagle is allergic to chicken"}))
        assert again["status"] == "reinforced" and again["id"] == stored["id"]

        found = data_of(await session.call_tool("retrieve", {"query": "what is the dog "
                                                             "allergic to", "limit": 3}))
        assert found["results"][0]["id"] == stored["id"]
        assert found["results"][0]["method"] in ("keyword-tree", "fts-warm", "llm-tree")

        hot = data_of(await session.call_tool("update_hot", {
            "key": "identity", "value": {"agent_name": "Claw", "owner_name": "Sam"}}))
        assert "Claw" in hot["memory_md"]
        data_of(await session.call_tool("update_hot", {
            "key": "lesson", "value": '{"text": "Never deploy on Fridays", "importance": 0.9}'}))

        report = data_of(await session.call_tool("end_conversation", {"messages": [
            {"role": "user", "content": "Remember that my dentist is Dr Okafor on Otley Road, "
                                        "appointment on 12 December."},
            {"role": "assistant", "content": "Noted."}]}))
        assert report["counts"]["added"] >= 1
        assert report["sync"]["target"] == "local archive"   # no cloud: where `sync` pushes
        assert report["sync"]["status"] == "pushed"
        assert report["bytes"]["memory_md"] > 0

        context = text_of(await session.call_tool("get_context", {"query": "dentist"}))
        assert "Okafor" in context and "Never deploy on Fridays" in context
        # What the memory handed out, pasted back through the tool, adds nothing (issue 25).
        echo = data_of(await session.call_tool("end_conversation", {"messages": [
            {"role": "user", "content": "Who is my dentist?"},
            {"role": "assistant", "content": "Here is what I have in memory:\n" + context},
            {"role": "user", "content": "Thanks! My notes:\n" + context}]}))
        assert echo["counts"]["added"] == 0, echo["added"]
        tree = text_of(await session.call_tool("show_tree", {}))
        assert "home/pets/biscuit" in tree

        pushed = data_of(await session.call_tool("sync", {}))   # the embedded default cloud
        assert pushed["status"] == "pushed" and pushed["outbox_depth"] == 0
        status = data_of(await session.call_tool("sync_status", {}))
        assert status["outbox_depth"] == 0 and status["last_push"]

        bad = await session.call_tool("update_hot", {"key": "nonsense", "value": {}})
        # The key is an enum in the tool's schema: the SDK refuses it before the library runs.
        assert is_error(bad) and '"identity"' in text_of(bad)
        assert "Traceback" not in text_of(bad)

        uris = {str(r.uri) for r in (await session.list_resources()).resources}
        assert {"evoclaw://memory/MEMORY.md", "evoclaw://memory/tree",
                "evoclaw://memory/tree.json"} <= uris
        md = resource_text(await session.read_resource("evoclaw://memory/MEMORY.md"))
        assert "Claw" in md and "Never deploy on Fridays" in md
        nodes = json.loads(resource_text(await session.read_resource(
            "evoclaw://memory/tree.json")))
        assert any(n["path"] == "home/pets/biscuit" and n["warm_count"] == 1 for n in nodes)
        return stored["id"]

    fact_id = run_session(home, "mcp-agent", body)
    # What the session did is in the agent's real memory on disk.
    with Memory.open("mcp-agent", home=home) as mem:
        assert mem.get(fact_id).access_count >= 1
        assert mem.hot.identity.agent_name == "Claw"
        assert mem.config.memory_md_path.read_text().count("Claw") >= 1


def test_mcp_command_without_the_extra_is_one_clear_error(home, tmp_path):
    # A Python that cannot import `mcp` (a shadowing package that raises ImportError).
    import os
    import subprocess
    shadow = tmp_path / "shadow" / "mcp"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("raise ImportError('no mcp here')\n")
    env = {**os.environ, "EVOCLAW_HOME": str(home),
           "PYTHONPATH": str(tmp_path / "shadow")}
    result = subprocess.run([script(), "mcp"], capture_output=True, text=True, env=env,
                            timeout=60, stdin=subprocess.DEVNULL)
    assert result.returncode == 9
    assert result.stderr.strip().startswith("error: the MCP server needs the optional extra")
    assert "Traceback" not in result.stderr


def test_tools_describe_themselves_for_desktop_hosts(home):
    """Every tool has a title, a description, described parameters and annotations;
    update_hot.key is an enum; importance and limit are bounded; the server reports the
    package's version; results are compact JSON text besides the structured content."""
    from evoclaw_memory.agent.mcp_server import package_version

    async def body(session):
        init_version = session._server_info if hasattr(session, "_server_info") else None
        tools = {t.name: t for t in (await session.list_tools()).tools}
        out = await session.call_tool("remember", {"text": "Biscuit likes carrots"})
        return init_version, tools, out

    info, tools, out = run_session(home, "hosts", body)
    assert set(tools) >= {"get_context", "retrieve", "remember", "end_conversation",
                          "update_hot", "show_tree", "sync", "sync_status"}
    for name, tool in tools.items():
        assert tool.title and tool.description, name
        assert tool.annotations is not None and tool.annotations.title, name
        schema = tool.input_schema if hasattr(tool, "input_schema") else tool.inputSchema
        for param, spec in schema.get("properties", {}).items():
            assert spec.get("description"), (name, param)
    def hint(name, field):
        return getattr(tools[name].annotations, field)
    for name in ("get_context", "retrieve", "show_tree", "sync_status"):
        assert hint(name, "read_only_hint") is True, name
    assert hint("update_hot", "destructive_hint") is True
    assert hint("remember", "read_only_hint") is False
    props = lambda name: (tools[name].input_schema)["properties"]  # noqa: E731
    assert props("update_hot")["key"]["enum"] == ["identity", "owner_profile", "lesson",
                                                  "event", "task", "project", "complete_task"]
    assert "when" in props("update_hot")["value"]["description"]
    importance = props("remember")["importance"]
    assert (importance["minimum"], importance["maximum"]) == (0.0, 1.0)
    assert (props("retrieve")["limit"]["minimum"], props("retrieve")["limit"]["maximum"]) == (1, 50)
    text = text_of(out)
    assert "\n" not in text and ": " not in text and json.loads(text)["status"] == "stored"
    assert package_version() == __import__("importlib.metadata").metadata.version("evoclaw-memory")
