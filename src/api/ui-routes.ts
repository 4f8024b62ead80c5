import { readFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { serveStatic } from "@hono/node-server/serve-static";
import { Hono } from "hono";

/** Where `npm run build:ui` (run by `npm ci` and `npm test`) writes the web UI. */
export const DEFAULT_UI_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../ui/dist");

/**
 * The web UI: its hashed files under `/_ui/` (cached for good), and its page for every other GET that asks for
 * HTML, so each UI URL (/assets/<key>, /runs/<id>, …) can be shared and reloaded. Register it after the API routes.
 * Without a build, pages explain how to make one instead of answering 404.
 */
export function uiRoutes(uiDir: string = DEFAULT_UI_DIR): Hono {
  const app = new Hono();
  app.use(
    "/_ui/*",
    serveStatic({
      root: uiDir,
      onFound: (_path, c) => {
        c.header("Cache-Control", "public, max-age=31536000, immutable");
      },
    }),
  );
  app.get("*", async (c, next) => {
    const accept = c.req.header("accept") ?? "";
    if (API_PATH.test(c.req.path) || !(accept.includes("text/html") || accept.includes("*/*") || accept === "")) return next();
    let html: string;
    try {
      html = await readFile(path.join(uiDir, "index.html"), "utf8");
    } catch {
      return c.html(NOT_BUILT(uiDir), 503);
    }
    c.header("Cache-Control", "no-cache");
    return c.html(html);
  });
  return app;
}

/** Paths the API owns: an unknown one answers the API's 404, never the UI's page. */
const API_PATH = /^\/(?:_ui|api|auth|graphql|healthz|readyz|metrics|execution)(?:\/|$)/;

const NOT_BUILT = (dir: string) => `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Tributary</title></head>
<body style="font:15px system-ui,sans-serif;margin:2rem">
<h1>The Tributary UI is not built</h1>
<p>No <code>${dir.replace(/[&<>]/g, "")}/index.html</code>. Run <code>npm run build:ui</code> (<code>npm ci</code> does it) and reload.
GraphQL answers at <a href="/graphql"><code>/graphql</code></a> meanwhile.</p></body></html>`;
