// Reading Server-Sent Events in tests, as a browser's EventSource would.

export interface SseEvent {
  event: string;
  data: string;
  id?: string;
}

/** Reads Server-Sent Events from a response body as they arrive. */
export function sseReader(res: Response): { next(): Promise<SseEvent | undefined>; cancel(): Promise<void> } {
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  return {
    async next() {
      for (;;) {
        const at = buffer.indexOf("\n\n");
        if (at >= 0) {
          const block = buffer.slice(0, at);
          buffer = buffer.slice(at + 2);
          const event: SseEvent = { event: "message", data: "" };
          const data: string[] = [];
          for (const line of block.split("\n")) {
            const [field, ...rest] = line.split(": ");
            const value = rest.join(": ");
            if (field === "event") event.event = value;
            else if (field === "data") data.push(value);
            else if (field === "id") event.id = value;
          }
          event.data = data.join("\n");
          return event;
        }
        const { done, value } = await reader.read();
        if (done) return undefined;
        buffer += decoder.decode(value, { stream: true });
      }
    },
    cancel: () => reader.cancel(),
  };
}

export async function allEvents(res: Response): Promise<SseEvent[]> {
  const reader = sseReader(res);
  const events: SseEvent[] = [];
  for (let e = await reader.next(); e; e = await reader.next()) events.push(e);
  return events;
}
