import path from "node:path";
import { defineConfig } from "vite";

const root = import.meta.dirname;
const api = process.env.TRIBUTARY_API_URL ?? "http://127.0.0.1:3000";

// The UI is a static bundle in ui/dist that `tributary dev` and `tributary api` serve at `/`.
// Its files live under /_ui/ so that they never shadow a page URL such as /assets/<key>.
export default defineConfig({
  root,
  base: "/",
  build: {
    outDir: path.join(root, "dist"),
    emptyOutDir: true,
    assetsDir: "_ui",
    sourcemap: true,
    chunkSizeWarningLimit: 2_000,
  },
  // `npx vite ui` while `tributary dev` runs: the API calls go to it.
  server: {
    proxy: Object.fromEntries(["/graphql", "/healthz", "/runs/", "/api/v1"].map((p) => [p, { target: api, changeOrigin: false }])),
  },
});
