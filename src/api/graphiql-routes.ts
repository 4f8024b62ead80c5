import { createRequire } from "node:module";
import { Hono } from "hono";
import type { GraphiQLOptions } from "graphql-yoga";

/**
 * GraphiQL from the installed @graphql-yoga/render-graphiql package rather
 * than a CDN, so `/graphql` in a browser works on a machine without internet.
 * Its files are served under a versioned path (cached for good); the bundle
 * (several MB) is imported on the first page request, not at start-up. The
 * page has no inline script (its Content-Security-Policy allows none): it
 * starts from two small files of its own and reads its options from a JSON
 * element.
 */
const VERSION = (createRequire(import.meta.url)("@graphql-yoga/render-graphiql/package.json") as { version: string }).version;
/** Where the page loads its script, stylesheet and editor workers from. */
export const GRAPHIQL_ASSETS_PATH = `/graphql/_graphiql/${VERSION}`;

type Bundle = typeof import("@graphql-yoga/render-graphiql/graphiql");
let bundle: Promise<Bundle> | undefined;
const loadBundle = (): Promise<Bundle> => (bundle ??= import("@graphql-yoga/render-graphiql/graphiql"));

const FILES: Record<string, { type: string; content: (b: Bundle) => string }> = {
  "graphiql.js": { type: "text/javascript; charset=utf-8", content: (b) => b.js },
  "graphiql.css": { type: "text/css; charset=utf-8", content: (b) => b.css },
  "editor.worker.js": { type: "text/javascript; charset=utf-8", content: (b) => b.editorWorkerService },
  "json.worker.js": { type: "text/javascript; charset=utf-8", content: (b) => b.jsonWorker },
  "graphql.worker.js": { type: "text/javascript; charset=utf-8", content: (b) => b.graphqlWorker },
  "setup.js": { type: "text/javascript; charset=utf-8", content: () => SETUP_JS },
  "start.js": { type: "text/javascript; charset=utf-8", content: () => START_JS },
};

const at = (file: string) => JSON.stringify(`${GRAPHIQL_ASSETS_PATH}/${file}`);

/** Before the bundle: where the Monaco editor finds its workers. */
const SETUP_JS = `self.MonacoEnvironment = {
  globalAPI: false,
  getWorkerUrl: function (moduleId, label) {
    return { editorWorkerService: ${at("editor.worker.js")}, json: ${at("json.worker.js")}, graphql: ${at("graphql.worker.js")} }[label];
  },
};
`;

/** After the bundle: renders GraphiQL with the options the page carries. */
const START_JS = `YogaGraphiQL.renderYogaGraphiQL(
  document.querySelector("#root"),
  JSON.parse(document.getElementById("graphiql-options").textContent),
);
`;

/** The routes of GraphiQL's files; register them before `/graphql`'s handler. */
export function graphiqlRoutes(): Hono {
  const app = new Hono();
  app.get(`${GRAPHIQL_ASSETS_PATH}/:file`, async (c) => {
    const file = FILES[c.req.param("file")];
    if (!file) return c.json({ error: { code: "NOT_FOUND", message: `${c.req.path} is not a GraphiQL file` } }, 404);
    const content = file.content(await loadBundle());
    return c.body(content, 200, { "content-type": file.type, "cache-control": "public, max-age=31536000, immutable" });
  });
  return app;
}

/** Yoga's `renderGraphiQL`: the page, with every file from this server. */
export async function renderLocalGraphiQL(options: GraphiQLOptions): Promise<string> {
  const { favicon } = await loadBundle();
  // The options are embedded in a script element: "<" is escaped so no value can close it.
  const opts = JSON.stringify(options).replace(/</g, "\\u003c");
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8" />
<title>${escapeHtml(options.title ?? "GraphiQL")}</title>
<link rel="icon" href="${favicon}" />
<link rel="stylesheet" href=${at("graphiql.css")} />
</head>
<body id="body" class="no-focus-outline">
<noscript>GraphiQL needs JavaScript.</noscript>
<div id="root"></div>
<script type="application/json" id="graphiql-options">${opts}</script>
<script src=${at("setup.js")}></script>
<script src=${at("graphiql.js")}></script>
<script src=${at("start.js")}></script>
</body>
</html>`;
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"]/g, (ch) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" })[ch]!);
}
