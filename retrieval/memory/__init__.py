"""The agent's memory: memories, decisions and tool calls, written, read, forgotten and ingested."""
