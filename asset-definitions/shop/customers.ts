import { allPartitions, asset, dep, dynamicPartitions } from "tributary";
import { removePartitionFile, rng, writePartitionFile } from "./_synthetic.js";

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
    // An erasure request reaching a customer's profile deletes the file this asset wrote for them.
    erase: async (ctx, { partitions }) => {
      for (const customer of partitions) {
        if (await removePartitionFile("customer_profiles", customer)) ctx.log(`deleted the profile file of ${customer}`);
      }
    },
  },
  async (ctx) => {
    const random = rng(ctx.partition.key);
    const profile = { customer: ctx.partition.key, lifetimeValueCents: Math.floor(random() * 1_000_000) };
    await writePartitionFile("customer_profiles", ctx.partition.key, profile);
    return profile;
  },
);

/** Customers by lifetime value: derived from every profile, so erasing one customer reaches it too. */
export const customerTiers = asset(
  {
    key: "shop/customer_tiers",
    owner: "team:crm",
    metadata: { pii: ["customers"] },
    deps: { profiles: dep(customerProfiles, allPartitions()) },
    erase: async (ctx) => {
      if (await removePartitionFile("customer_tiers", "")) ctx.log("deleted the tiers file; re-materialisation writes it again");
    },
  },
  async (_ctx, { profiles }) => {
    const tiers: Record<"gold" | "silver" | "bronze", string[]> = { gold: [], silver: [], bronze: [] };
    for (const p of profiles) {
      if (!p) continue;
      const tier = p.lifetimeValueCents >= 700_000 ? "gold" : p.lifetimeValueCents >= 300_000 ? "silver" : "bronze";
      tiers[tier].push(p.customer);
    }
    await writePartitionFile("customer_tiers", "", tiers);
    return { gold: tiers.gold.length, silver: tiers.silver.length, bronze: tiers.bronze.length, customers: tiers };
  },
);
