"""The episodic source: the agent's decisions and tool calls, found by keyword."""
