"""factledger as an MCP server (the `factledger[mcp]` extra): a shell like the CLI and the ADK service.

`scope` says whom a caller may name, `tokens` keeps the hashed bearer tokens of the HTTP
transport, `tools` does each tool's work on the `Ledger` facade (no MCP types), and `server`
wraps those in the official `mcp` SDK's `MCPServer` for stdio and streamable HTTP (docs/mcp.md);
`workers` runs the HTTP server as several processes on one port.
Only `server` imports the SDK, and only `factledger mcp` imports `server`.
"""
