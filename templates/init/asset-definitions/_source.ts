// Files whose names start with "_" are helpers: Tributary does not load them as definitions.
// This one stands in for your source system (a database, an API, a bucket); replace it with a real read.

export interface Order {
  id: string;
  day: string;
  amountCents: number;
}

/** The orders placed on one day (YYYY-MM-DD): made up, but the same every time for the same day. */
export function ordersOn(day: string): Order[] {
  let seed = [...day].reduce((n, c) => (n * 31 + c.charCodeAt(0)) % 2_147_483_647, 7);
  const next = () => (seed = (seed * 48_271) % 2_147_483_647);
  const count = 5 + (next() % 20);
  return Array.from({ length: count }, (_, i) => ({ id: `${day}-${i + 1}`, day, amountCents: 500 + (next() % 9_500) }));
}
