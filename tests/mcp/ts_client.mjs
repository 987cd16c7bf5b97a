// A non-Python MCP client: the TypeScript SDK over streamable HTTP with a bearer token.
// Usage: node ts_client.mjs URL TOKEN  -> one JSON line on stdout with what the server answered.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [url, token] = process.argv.slice(2);
const transport = new StreamableHTTPClientTransport(new URL(url), {
  requestInit: { headers: { Authorization: `Bearer ${token}` } },
});
const client = new Client({ name: "factledger-ts-test", version: "0.0.0" });
await client.connect(transport);
const tools = (await client.listTools()).tools;
const remembered = await client.callTool({
  name: "remember",
  arguments: { predicate: "home_city", value: "Lisbon", quote: "I live in Lisbon", session: "ts-chat" },
});
const recalled = await client.callTool({ name: "recall", arguments: { query: "where do I live?" } });
const refused = await client.callTool({ name: "facts", arguments: { user: "someone-else" } });
console.log(JSON.stringify({
  tools: tools.map((t) => ({ name: t.name, annotations: t.annotations })),
  remembered: remembered.structuredContent,
  block: recalled.content[0].text,
  facts: recalled.structuredContent.facts,
  refused: { isError: refused.isError, text: refused.content[0].text },
}));
await client.close();
