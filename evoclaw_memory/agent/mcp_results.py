"""What the MCP server's tools return and how they describe themselves: results as
structured content plus the same data as compact JSON text, and the tools' annotations,
for the installed SDK (v2 or v1). Used by mcp_server and mcp_control."""

import datetime as dt
from pathlib import Path
from typing import Any

import msgspec


def annotations_for(title: str, read_only: bool = False, destructive: bool = False,
                    idempotent: bool = False, open_world: bool = False) -> Any:
    """ToolAnnotations for the installed SDK (v2 mcp_types, v1 mcp.types)."""
    try:
        from mcp_types import ToolAnnotations
    except ImportError:
        from mcp.types import ToolAnnotations
    hints: dict[str, Any] = {"title": title, "readOnlyHint": read_only,
                             "openWorldHint": open_world}
    if not read_only:   # the spec defines these only for tools that change something
        hints.update(destructiveHint=destructive, idempotentHint=idempotent)
    return ToolAnnotations.model_validate(hints)


def compact(data: Any) -> Any:
    """A tool result: structured content, and the same data as compact JSON text."""
    try:
        from mcp_types import CallToolResult
    except ImportError:
        from mcp.types import CallToolResult
    data = plain(data)
    text = msgspec.json.encode(data).decode()
    return CallToolResult.model_validate({"content": [{"type": "text", "text": text}],
                                          "structuredContent": data})


def plain(obj: Any) -> Any:
    """JSON-ready data with every Struct field included (omit_defaults would drop some)."""
    if isinstance(obj, msgspec.Struct):
        return {k: plain(v) for k, v in msgspec.structs.asdict(obj).items()}
    if isinstance(obj, dict):
        return {str(k): plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple, set, frozenset)):
        return [plain(v) for v in obj]
    if isinstance(obj, Path):
        return str(obj)
    if isinstance(obj, (dt.datetime, dt.date)):
        return obj.isoformat()
    return obj
