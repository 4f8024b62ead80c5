import { Hono } from "hono";
import { createYoga, maskError } from "graphql-yoga";
import { GraphQLError } from "graphql";
import { schema } from "./graphql/schema.js";
import type { ApiContext } from "./graphql/builder.js";
import { TributaryError } from "../errors/index.js";

export interface ApiOptions {
  context: ApiContext;
  /** Checks the database answers; /healthz reports it. */
  ping: () => Promise<void>;
  version: string;
}

/** The HTTP surface: health, GraphQL, and the UI's landing page. */
export function createApiApp(options: ApiOptions): Hono {
  const yoga = createYoga({
    schema,
    context: () => options.context,
    graphqlEndpoint: "/graphql",
    landingPage: false,
    maskedErrors: {
      maskError(error, message, isDev) {
        const original = error instanceof GraphQLError ? error.originalError : undefined;
        if (original instanceof TributaryError) {
          return new GraphQLError(original.message, { extensions: { code: original.code } });
        }
        return maskError(error, message, isDev);
      },
    },
  });

  const app = new Hono();
  app.get("/healthz", async (c) => {
    try {
      await options.ping();
      return c.json({ status: "ok", version: options.version });
    } catch (err) {
      return c.json({ status: "unavailable", error: (err as Error).message }, 503);
    }
  });
  app.on(["GET", "POST", "OPTIONS"], "/graphql", (c) => yoga.fetch(c.req.raw, {}));
  app.get("/", (c) => c.html(LANDING));
  return app;
}

const LANDING = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Tributary</title>
<style>body{font:15px system-ui,sans-serif;margin:2rem;max-width:60rem}code{background:#f3f3f3;padding:0 .3em}
table{border-collapse:collapse}td,th{border-bottom:1px solid #ddd;padding:.3em .8em;text-align:left}</style></head>
<body><h1>Tributary</h1>
<p>GraphQL endpoint: <a href="/graphql"><code>/graphql</code></a> (GraphiQL in a browser).</p>
<h2>Assets</h2><table id="assets"><thead><tr><th>key</th><th>group</th><th>partitions</th><th>upstream</th></tr></thead><tbody></tbody></table>
<h2>Definition errors</h2><ul id="errors"></ul>
<script type="module">
const q = '{ assets { key group partitionsDescription upstream { key } } definitionErrors { path code message } }';
const r = await fetch('/graphql', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ query: q }) });
const { data, errors } = await r.json();
if (errors) document.body.insertAdjacentHTML('beforeend', '<p style="color:#b00">' + errors.map(e => e.message).join('<br>') + '</p>');
const esc = (s) => String(s ?? '').replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]);
document.querySelector('#assets tbody').innerHTML = (data?.assets ?? []).map(a =>
  '<tr><td>' + esc(a.key) + '</td><td>' + esc(a.group) + '</td><td>' + esc(a.partitionsDescription ?? 'unpartitioned') +
  '</td><td>' + a.upstream.map(u => esc(u.key)).join(', ') + '</td></tr>').join('');
document.querySelector('#errors').innerHTML = (data?.definitionErrors ?? []).map(e =>
  '<li><code>' + esc(e.path) + '</code> ' + esc(e.code) + ': ' + esc(e.message) + '</li>').join('') || '<li>none</li>';
</script></body></html>`;
