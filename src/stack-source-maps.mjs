// Stack traces of the precompiled code (dist/cli) that name the sources, with the source maps read only when a
// stack is formatted. Node's own support (`--enable-source-maps`, `process.setSourceMapsEnabled`) parses the map of
// every module as it loads: about a quarter of a second of each start of a CLI command or worker process, spent for
// the rare stack anyone reads. Plain JS: bin/tributary.mjs installs it before it has anything to run TypeScript with.
import { readFileSync } from "node:fs";
import { findSourceMap, SourceMap } from "node:module";
import { fileURLToPath, pathToFileURL } from "node:url";

/**
 * Formats every stack from now on (`Error.prepareStackTrace`) as V8 does, with each frame in a file under `dir`
 * mapped to its source through the file's `.map` beside it, and each frame in a module whose map Node keeps (code
 * loaded while Node's own support is on, such as a step's compiled definitions) through that map.
 *
 * @param {URL} dir the directory of the precompiled code (a file URL ending in `/`)
 */
export function mapStacksLazily(dir) {
  const prefix = dir.href;
  /** @type {Map<string, SourceMap | null>} */
  const read = new Map();
  /** @param {string} file @returns {SourceMap | undefined} */
  const mapOf = (file) => {
    const kept = findSourceMap(file);
    if (kept) return kept;
    if (!file.startsWith(prefix)) return undefined;
    if (!read.has(file)) {
      try {
        read.set(file, new SourceMap(JSON.parse(readFileSync(new URL(`${file}.map`), "utf8"))));
      } catch {
        read.set(file, null); // no map, or an unreadable one: the frame stays as it is
      }
    }
    return read.get(file) ?? undefined;
  };
  Error.prepareStackTrace = (error, frames) => {
    let head;
    try {
      head = Error.prototype.toString.call(error);
    } catch {
      head = "<error>";
    }
    return [head, ...frames.map((frame) => `    at ${mappedFrame(frame, mapOf)}`)].join("\n");
  };
}

/**
 * One frame as V8 writes it, its location replaced by the source's when a map knows it.
 *
 * @param {NodeJS.CallSite} frame
 * @param {(file: string) => SourceMap | undefined} mapOf
 * @returns {string}
 */
function mappedFrame(frame, mapOf) {
  const text = frame.toString();
  const file = frame.getFileName();
  const line = frame.getLineNumber();
  const column = frame.getColumnNumber();
  if (!file || line === null || column === null) return text;
  let source;
  try {
    const map = mapOf(file);
    const entry = map?.findEntry(line - 1, column - 1);
    if (!entry || !("originalSource" in entry) || !entry.originalSource) return text;
    // A CommonJS frame names a path, an ES module's a URL: the source is named the same way.
    const isUrl = /^\w+:\/\//.test(file);
    const url = new URL(entry.originalSource, isUrl ? file : pathToFileURL(file));
    const name = isUrl || url.protocol !== "file:" ? url.href : fileURLToPath(url);
    source = `${name}:${entry.originalLine + 1}:${entry.originalColumn + 1}`;
  } catch {
    return text;
  }
  const at = `${file}:${line}:${column}`;
  const index = text.lastIndexOf(at);
  return index === -1 ? text : text.slice(0, index) + source + text.slice(index + at.length);
}
