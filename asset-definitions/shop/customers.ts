import { asset, dynamicPartitions } from "tributary";
import { rng, writePartitionFile } from "./_synthetic.js";

/** Discovers customers and registers each as a dynamic partition. */
export const customerDirectory = asset(
  { key: "shop/customer_directory", owner: "team:crm", metadata: { pii: ["name", "email"] } },
  async (ctx) => {
    const customers = Array.from({ length: 12 }, (_, i) => `customer-${i + 1}`);
    await ctx.addDynamicPartitions("customers", customers);
    await writePartitionFile("customer_directory", "all", customers);
    return { customers: customers.length };
  },
);

/** One profile per customer: partitions appear as customers are discovered. */
export const customerProfiles = asset(
  {
    key: "shop/customer_profiles",
    partitions: dynamicPartitions("customers"),
    owner: "team:crm",
    metadata: { pii: ["email"] },
    deps: { directory: customerDirectory },
  },
  async (ctx) => {
    const random = rng(ctx.partition.key);
    const profile = { customer: ctx.partition.key, lifetimeValueCents: Math.floor(random() * 1_000_000) };
    await writePartitionFile("customer_profiles", ctx.partition.key, profile);
    return profile;
  },
);
