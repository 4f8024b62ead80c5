/** The asset key in an `/assets/<key>` path: each segment URL-decoded (keys hold slashes); undecodable text as is. */
export function decodeAssetKey(path: string): string {
  try {
    return path.split("/").map(decodeURIComponent).join("/");
  } catch {
    return path;
  }
}
