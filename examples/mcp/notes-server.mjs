#!/usr/bin/env node
/**
 * A small MCP server for the examples, built on @modelcontextprotocol/sdk: a notebook kept in memory (per process).
 *
 *   node examples/mcp/notes-server.mjs --stdio          # stdin/stdout (examples/kagent's MCPServer runs it so)
 *   node examples/mcp/notes-server.mjs --http 3001      # Streamable HTTP at http://127.0.0.1:3001/mcp
 *
 * Tools: `save_note {title, text}` (a side effect: agentloom treats it as unsafe), `list_notes {}` and
 * `search_notes {query}` (reads, safe to send again).
 */
import { createServer } from 'node:http';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import * as z from 'zod';

const notes = [];

function notebook() {
  const server = new McpServer({ name: 'agentloom-notes', version: '1.0.0' });
  server.registerTool(
    'save_note',
    {
      description: 'Saves a note with a title.',
      inputSchema: { title: z.string(), text: z.string() },
      outputSchema: { saved: z.number() },
    },
    async ({ title, text }) => {
      notes.push({ title, text });
      return {
        content: [{ type: 'text', text: `saved "${title}" (${notes.length} notes)` }],
        structuredContent: { saved: notes.length },
      };
    },
  );
  server.registerTool('list_notes', { description: 'Lists the titles of the saved notes.' }, async () => ({
    content: [{ type: 'text', text: notes.map((n) => n.title).join('\n') || '(no notes yet)' }],
  }));
  server.registerTool(
    'search_notes',
    { description: 'Finds the notes whose text contains the query.', inputSchema: { query: z.string() } },
    async ({ query }) => {
      const found = notes.filter((n) => n.text.toLowerCase().includes(query.toLowerCase()));
      return {
        content: [
          { type: 'text', text: found.map((n) => `${n.title}: ${n.text}`).join('\n') || 'nothing found' },
        ],
      };
    },
  );
  return server;
}

const [mode, port] = process.argv.slice(2);
if (mode === '--stdio') {
  await notebook().connect(new StdioServerTransport());
} else if (mode === '--http') {
  // Stateless Streamable HTTP: a server and a transport per request, one notebook (`notes`) for the process.
  createServer(async (req, res) => {
    if (req.url !== '/mcp') {
      res.writeHead(404).end();
      return;
    }
    const chunks = [];
    for await (const chunk of req) chunks.push(chunk);
    const body = chunks.length > 0 ? JSON.parse(Buffer.concat(chunks).toString()) : undefined;
    const server = notebook();
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    res.on('close', () => {
      void transport.close();
      void server.close();
    });
    await server.connect(transport);
    await transport.handleRequest(req, res, body);
  }).listen(Number(port ?? 3001), '127.0.0.1', function () {
    console.log(`notes MCP server: http://127.0.0.1:${this.address().port}/mcp`);
  });
} else {
  console.error('usage: notes-server.mjs --stdio | --http PORT');
  process.exit(2);
}
