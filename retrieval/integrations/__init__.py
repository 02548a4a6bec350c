"""Where agents live: the MCP server, LangChain's and LlamaIndex's retrievers, LangGraph's store.

Each module imports its framework, an optional extra (``pip install 'retrieval[mcp]'``,
``'retrieval[langchain]'``, ``'retrieval[llamaindex]'``, ``'retrieval[langgraph]'``); importing
this package imports none.
"""
