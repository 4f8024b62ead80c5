import { describe, expect, it } from "vitest";
import type { StepDispatch } from "../../src/execution/index.js";
import { runMessage } from "../../src/executor/worker-process.js";

const dispatch = (stepId: number, mapIndex = -1): StepDispatch => ({
  stepId,
  runId: "00000000-0000-0000-0000-000000000000",
  tryNumber: 1,
  assetKey: "a/b",
  partitionKey: "",
  mapIndex,
  partition: { window: null, dimensions: null },
  file: "/defs/a.ts",
  exportName: "b",
  timeoutMs: null,
  logRef: "/logs/x.log",
  ...(mapIndex >= 0 ? { map: { index: mapIndex, item: mapIndex, label: null } } : {}),
});

describe("the message that hands steps to a worker process", () => {
  it("sends an input object that several steps read once, and the rest as they are", () => {
    const list = { files: Array.from({ length: 1000 }, (_, i) => `f${i}`) };
    const own = { n: 1 };
    const message = runMessage([
      { dispatch: dispatch(1, 0), inputs: { list, own } },
      { dispatch: dispatch(2, 1), inputs: { list, n: 3 } },
      { dispatch: dispatch(3), inputs: { other: { n: 2 } } },
    ]);
    expect(message.shared).toEqual([list]);
    expect(message.steps.map((s) => [s.inputs, s.sharedInputs])).toEqual([
      [{ own }, { list: 0 }],
      [{ n: 3 }, { list: 0 }],
      [{ other: { n: 2 } }, undefined],
    ]);
    // Once on the wire, however many steps read it.
    const wire = JSON.stringify(message);
    expect(wire.split('"f999"').length - 1).toBe(1);
  });

  it("leaves a message without shared inputs unchanged", () => {
    const message = runMessage([
      { dispatch: dispatch(1), inputs: { a: { x: 1 } } },
      { dispatch: dispatch(2), inputs: { a: { x: 1 } } },
    ]);
    expect(message.shared).toBeUndefined();
    expect(message.steps.every((s) => s.sharedInputs === undefined)).toBe(true);
  });
});
