import { localGuard, type Guard } from "../../access/index.js";
import { InputError, TributaryError } from "../../errors/index.js";
import { loadPartitionContext, partitionSpace } from "../../partitions/index.js";
import type { DefinitionStore, EventStore, GraphCache, JsonValue, ReportedEventKind } from "../../storage/index.js";

/** Largest metadata accepted on a reported event, as UTF-8 JSON. */
export const MAX_EVENT_METADATA_BYTES = 64 * 1024;

export interface ReportAssetEventRequest {
  readonly assetKey: string;
  /** Required for a partitioned asset; must be left out for an unpartitioned one. */
  readonly partition?: string | undefined;
  /** A JSON object (at most 64 KB). */
  readonly metadata?: unknown;
  readonly dataVersion?: string | undefined;
  /** "external" (default): a producer wrote the partition; "observation": it was seen to exist/change. */
  readonly kind?: ReportedEventKind | undefined;
}

export interface ReportEventServices {
  readonly graphs: GraphCache;
  readonly events: EventStore;
  readonly definitions: Pick<DefinitionStore, "listDynamicPartitions">;
}

export interface ReportedAssetEvent {
  readonly eventId: number;
  readonly assetKey: string;
  /** '' for an unpartitioned asset. */
  readonly partitionKey: string;
  readonly kind: ReportedEventKind;
  readonly createdAt: Date;
}

/**
 * Records that a producer outside Tributary wrote a partition of an asset:
 * validated against the current definitions (nothing is written on any
 * error), then stored as an event that marks the partition materialised.
 *
 * Errors: GraphError GRAPH_UNKNOWN_ASSET (with the nearest key); InputError
 * DEFINITIONS_NOT_LOADED, EVENT_PARTITION_REQUIRED, EVENT_PARTITION_UNEXPECTED,
 * EVENT_PARTITION_INVALID, EVENT_PARTITION_NOT_EXISTING, EVENT_METADATA_INVALID,
 * EVENT_METADATA_TOO_LARGE, EVENT_DATA_VERSION_INVALID.
 */
export async function reportAssetEvent(
  services: ReportEventServices,
  request: ReportAssetEventRequest,
  now: Date,
  guard: Guard = localGuard(),
): Promise<ReportedAssetEvent> {
  const { version, graph } = await services.graphs.current({ fresh: true });
  if (version === 0)
    throw new InputError("no definitions are loaded yet; check `tributary check` for load errors", { code: "DEFINITIONS_NOT_LOADED" });
  const asset = graph.require(request.assetKey);
  const key = asset.key;
  const location = { assetKey: key };

  let partitionKey = "";
  if (!asset.partitions) {
    if (request.partition !== undefined && request.partition !== "") {
      throw new InputError(`asset "${key}" is not partitioned: leave out the partition (got "${request.partition}")`, {
        code: "EVENT_PARTITION_UNEXPECTED",
        location,
      });
    }
  } else {
    if (request.partition === undefined || request.partition === "") {
      throw new InputError(`asset "${key}" is partitioned: name the partition the event is for (--partition / partition)`, {
        code: "EVENT_PARTITION_REQUIRED",
        location,
      });
    }
    const ctx = await loadPartitionContext([asset.partitions], (name) => services.definitions.listDynamicPartitions(name));
    const space = partitionSpace(asset.partitions, ctx);
    let index: number;
    try {
      index = space.indexOf(request.partition);
    } catch (err) {
      const reason = err instanceof TributaryError ? err.message : String(err);
      throw new InputError(`asset "${key}": ${reason}`, { code: "EVENT_PARTITION_INVALID", location, cause: err });
    }
    if (index >= space.count(now)) {
      const window = space.window(request.partition);
      throw new InputError(
        `asset "${key}": partition "${request.partition}" does not exist yet` +
          (window ? ` (its window ends ${window.end.toISOString()}, now is ${now.toISOString()})` : ""),
        { code: "EVENT_PARTITION_NOT_EXISTING", location },
      );
    }
    partitionKey = request.partition;
  }

  const metadata = request.metadata ?? {};
  if (typeof metadata !== "object" || metadata === null || Array.isArray(metadata)) {
    throw new InputError(
      `event for "${key}"${partitionKey ? ` partition "${partitionKey}"` : ""}: metadata must be a JSON object, got ${describe(metadata)}`,
      {
        code: "EVENT_METADATA_INVALID",
        location,
      },
    );
  }
  let text: string;
  try {
    text = JSON.stringify(metadata);
  } catch (err) {
    throw new InputError(`event for "${key}": metadata is not JSON (${(err as Error).message})`, {
      code: "EVENT_METADATA_INVALID",
      location,
    });
  }
  const bytes = Buffer.byteLength(text, "utf8");
  if (bytes > MAX_EVENT_METADATA_BYTES) {
    throw new InputError(`event for "${key}": metadata is ${bytes} bytes as JSON, over the ${MAX_EVENT_METADATA_BYTES}-byte limit`, {
      code: "EVENT_METADATA_TOO_LARGE",
      location,
    });
  }
  if (
    request.dataVersion !== undefined &&
    (typeof request.dataVersion !== "string" || request.dataVersion.length === 0 || request.dataVersion.length > 256)
  ) {
    throw new InputError(`event for "${key}": dataVersion must be a non-empty string of at most 256 characters`, {
      code: "EVENT_DATA_VERSION_INVALID",
      location,
    });
  }

  const kind = request.kind ?? "external";
  const [eventId] = await services.events.reportEvents(
    [
      {
        assetKey: key,
        partitionKey,
        kind,
        metadata: JSON.parse(text) as Record<string, JsonValue>,
        dataVersion: request.dataVersion ?? null,
      },
    ],
    now,
    await guard.authorize("reportAssetEvent", "operator", {
      assets: [key],
      partitions: partitionKey ? [partitionKey] : [],
      detail: { kind },
    }),
  );
  return { eventId: eventId!, assetKey: key, partitionKey, kind, createdAt: now };
}

function describe(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  return `a ${typeof value}`;
}
