// The official TypeScript SDK's client (pinned in package-lock.json) over Streamable HTTP, for
// tests/mcp_http.rs:
//
//   node http-client.mjs PLAN_JSON URL
//
// Sends `Authorization: Bearer $SC_MCP_TOKEN`. PLAN: {declare (elicitation capability), answer
// ("accept-true" or "decline"), calls: [{name, arguments}]}. Prints one JSON report: the tools
// listed, the elicitations' params, and each call's result or {error}.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const plan = JSON.parse(process.argv[2]);
const url = new URL(process.argv[3]);
const CALL_OPTIONS = { timeout: 600_000 };
const report = { tools: [], elicitations: [], results: [] };

const transport = new StreamableHTTPClientTransport(url, {
  requestInit: { headers: { Authorization: `Bearer ${process.env.SC_MCP_TOKEN}` } },
});
const client = new Client(
  { name: "skeleton-crew-http-test", version: "1" },
  { capabilities: plan.declare ? { elicitation: {} } : {} },
);
if (plan.declare) {
  client.setRequestHandler(ElicitRequestSchema, async (request) => {
    report.elicitations.push(request.params);
    return plan.answer === "accept-true"
      ? { action: "accept", content: { approve: true } }
      : { action: "decline" };
  });
}
await client.connect(transport);
report.tools = (await client.listTools()).tools.map((tool) => tool.name).sort();
for (const call of plan.calls) {
  try {
    report.results.push(await client.callTool(call, undefined, CALL_OPTIONS));
  } catch (err) {
    report.results.push({ error: String(err.message ?? err) });
  }
}
console.log(JSON.stringify(report));
await client.close();
