"""Where agents live: the MCP server, LangChain's and LlamaIndex's retrievers.

Each module imports its framework, an optional extra (``pip install 'retrieval[mcp]'``,
``'retrieval[langchain]'``, ``'retrieval[llamaindex]'``); importing this package imports none.
"""
