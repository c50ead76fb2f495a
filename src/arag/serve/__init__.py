"""The surfaces: the command line (``cli``), the HTTP API and web page (``http``, ``web/``) and the MCP server
(``mcp``). Each only parses, calls the Python API (``arag.api``, ``arag.eval``) and formats."""
