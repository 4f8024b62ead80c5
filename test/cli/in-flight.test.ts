import { setTimeout as sleep } from "node:timers/promises";
import { describe, expect, it } from "vitest";
import { InFlight } from "../../src/cli/in-flight.js";

/** A request whose answer the test gives when it likes. */
function pendingRequest(requests: InFlight): { answer: () => void; answered: Promise<Response> } {
  let answer!: () => void;
  const given = new Promise<void>((resolve) => (answer = resolve));
  const answered = requests.count(async () => {
    await given;
    return new Response("ok");
  });
  return { answer, answered };
}

/** Whether the promise has settled by the time the event loop has turned. */
async function settled(promise: Promise<unknown>): Promise<boolean> {
  let done = false;
  void promise.then(() => (done = true));
  await sleep(0);
  return done;
}

describe("InFlight.quiet: a pause in the requests a server answers", () => {
  it("waits while a request is being answered, then for the pause after its answer", async () => {
    const requests = new InFlight();
    const request = pendingRequest(requests);
    const quiet = requests.quiet(30, 60_000);
    await sleep(80);
    expect(await settled(quiet)).toBe(false);

    request.answer();
    await request.answered;
    const answeredAt = performance.now();
    await quiet;
    expect(performance.now() - answeredAt).toBeGreaterThanOrEqual(29);
  });

  it("starts the pause again when a request comes and goes during it", async () => {
    const requests = new InFlight();
    const asked = performance.now();
    const quiet = requests.quiet(60, 60_000);
    await sleep(20);
    await requests.count(() => new Response("ok"));
    const answeredAt = performance.now();
    await quiet;
    expect(performance.now() - answeredAt).toBeGreaterThanOrEqual(59);
    expect(performance.now() - asked).toBeGreaterThanOrEqual(79);
  });

  it("counts the pause from the call, not from the server's start", async () => {
    const requests = new InFlight();
    await sleep(50);
    const asked = performance.now();
    await requests.quiet(40, 60_000);
    expect(performance.now() - asked).toBeGreaterThanOrEqual(39);
  });

  it("gives up after maxMs while a request is still being answered, and still answers it", async () => {
    const requests = new InFlight();
    const request = pendingRequest(requests);
    await requests.quiet(10, 50);
    expect(await settled(request.answered)).toBe(false);
    request.answer();
    expect(await (await request.answered).text()).toBe("ok");
  });

  it("passes on a request's failure and counts it as ended", async () => {
    const requests = new InFlight();
    await expect(requests.count(() => Promise.reject(new Error("handler failed")))).rejects.toThrow("handler failed");
    await requests.quiet(10, 60_000); // would wait the full minute if the failed request still counted
  });
});
