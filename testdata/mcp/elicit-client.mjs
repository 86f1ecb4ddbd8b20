// A real MCP client for sc-mcp's elicitation tests, built on the official TypeScript SDK
// (@modelcontextprotocol/sdk, pinned in package-lock.json and installed by `make test-deps`).
//
//   node elicit-client.mjs PLAN_JSON COMMAND [ARGS…]
//
// Spawns COMMAND (sc-mcp in front of a server) with the SDK's StdioClientTransport, connects,
// makes the plan's calls in order, and prints one JSON report on stdout. The plan:
//
//   declare      whether `initialize` declares the elicitation capability (and a handler is set)
//   answer       how the person answers each `elicitation/create`:
//                  accept-true, accept-false, accept-string (approve "true", not a boolean),
//                  accept-scope (approve true, with the plan's `scope` as how far it reaches),
//                  accept-no-content, decline, cancel,
//                  error      (the handler throws: the client answers with a JSON-RPC error),
//                  both       (a malformed response, written past the SDK: `result` accepting with
//                              approve true, and an `error` as well),
//                  silent     (no answer until sc-mcp withdraws the question)
//   scope        with accept-scope: the `scope` answered (any JSON value)
//   calls        [{name, arguments}], called in order
//   whileAsked   optional {name, arguments}: called from inside the handler, and awaited, before
//                the answer is given (the proxy must keep relaying while the person is asked)
//
// The report: `incoming` (the method of every request and notification the client received, as
// they arrived on the wire), `elicitations` (their params), `whileAsked` (results of the calls made
// while asked), `withdrawn` (why sc-mcp withdrew a question, from its notifications/cancelled),
// `results` (each call's result, or {error}).
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { ElicitRequestSchema, McpError } from "@modelcontextprotocol/sdk/types.js";

const plan = JSON.parse(process.argv[2]);
const [command, ...args] = process.argv.slice(3);
// Generous: sc-mcp waits for a person; the tests' own deadlines end a stuck run.
const CALL_OPTIONS = { timeout: 600_000 };

const report = { incoming: [], elicitations: [], whileAsked: [], withdrawn: [], results: [] };

const transport = new StdioClientTransport({ command, args, env: process.env, stderr: "inherit" });
const client = new Client(
  { name: "skeleton-crew-elicit-test", version: "1" },
  { capabilities: plan.declare ? { elicitation: {} } : {} },
);

function answer(extra) {
  switch (plan.answer) {
    case "accept-true":
      return { action: "accept", content: { approve: true } };
    case "accept-false":
      return { action: "accept", content: { approve: false } };
    case "accept-scope":
      return { action: "accept", content: { approve: true, scope: plan.scope } };
    case "accept-string":
      return { action: "accept", content: { approve: "true" } };
    case "accept-no-content":
      return { action: "accept" };
    case "decline":
      return { action: "decline" };
    case "cancel":
      return { action: "cancel" };
    case "error":
      throw new McpError(-32000, "the person's dialog could not be shown");
    case "silent":
      // The SDK sends nothing for a request sc-mcp cancelled, whatever this returns.
      return new Promise((resolve) =>
        extra.signal.addEventListener("abort", () => resolve({ action: "cancel" }), { once: true }),
      );
    default:
      throw new Error(`unknown answer ${plan.answer}`);
  }
}

if (plan.declare) {
  client.setRequestHandler(ElicitRequestSchema, async (request, extra) => {
    report.elicitations.push(request.params);
    if (plan.whileAsked) {
      report.whileAsked.push(
        await client.callTool(plan.whileAsked, undefined, CALL_OPTIONS).catch((error) => ({
          error: String(error),
        })),
      );
    }
    return answer(extra);
  });
}

await client.connect(transport);

// Every message as it arrives on the wire, before the SDK reads it; the malformed answer is
// written here, past the SDK's own checks.
const deliver = transport.onmessage;
transport.onmessage = (message, extra) => {
  if (message.method) {
    report.incoming.push(message.method);
  }
  if (message.method === "notifications/cancelled") {
    report.withdrawn.push(message.params);
  }
  if (plan.answer === "both" && message.method === "elicitation/create") {
    report.elicitations.push(message.params);
    transport.send({
      jsonrpc: "2.0",
      id: message.id,
      result: { action: "accept", content: { approve: true } },
      error: { code: -32000, message: "and also not" },
    });
    return;
  }
  deliver(message, extra);
};

for (const call of plan.calls) {
  try {
    report.results.push(await client.callTool(call, undefined, CALL_OPTIONS));
  } catch (error) {
    report.results.push({ error: String(error) });
  }
}

process.stdout.write(JSON.stringify(report) + "\n");
await client.close();
