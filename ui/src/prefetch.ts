// Runs first, before React loads and renders: for an asset page URL, asks for the definition and the partition
// status at once, so the slowest answer (the status ranges of 100 000 partitions) is on its way while the app
// starts. The page's useQuery takes these answers (api.ts prefetch).
import { prefetch } from "./api";
import { decodeAssetKey } from "./asset-path";
import { ASSET_QUERY, STATUS_QUERY } from "./pages/asset-queries";

const match = /^\/assets\/(.+)$/.exec(window.location.pathname);
if (match?.[1]) {
  const key = decodeAssetKey(match[1]);
  prefetch(ASSET_QUERY, { key });
  prefetch(STATUS_QUERY, { key });
}
