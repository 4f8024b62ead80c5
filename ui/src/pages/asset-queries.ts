// The asset page's first two queries, in a module without React: the app's entry sends them for an asset URL
// before the first render (see ../prefetch.ts), and the page's useQuery picks the answers up.

export const ASSET_QUERY = `query($key: String!) { asset(key: $key) {
  key kind group owner description file tags metadata partitionsDefinition partitionsDescription automation
  pool priority retries timeoutMs triggerRule executor codeVersion paused pausedAt
  deps { assetKey name mapping } upstream { key } downstream { key }
  latestMaterialization { createdAt runId partitionKey kind }
  viewerCan { operate administer }
} }`;

// The partition status the bar and the partition list draw from.
export const STATUS_QUERY = `query($key: String!) { asset(key: $key) { partitionStatus {
  counts { missing materializing materialized failed stale timedOut erased total }
  ranges { status from to count }
} } }`;
