import { sql, type Kysely } from "kysely";
import type { Database } from "../../src/storage/index.js";

/**
 * Empties every table except schema_migrations, restarts the sequences and
 * puts pools back to the migrated seed, so that tests in one file can share a
 * database. DELETE, not TRUNCATE: on small tables it is far cheaper.
 */
export async function resetDatabase(db: Kysely<Database>): Promise<void> {
  const { rows } = await sql<{ name: string }>`
    select tablename as name from pg_tables
    where schemaname = 'public' and tablename not in ('schema_migrations', 'pools')
    order by tablename`.execute(db);
  const statements = [
    ...rows.map((r) => `delete from "${r.name}";`),
    `delete from pools where name <> 'default_pool';`,
    `update pools set slots = 128, description = 'Default pool', include_deferred = false;`,
    `select setval(c.oid, 1, false) from pg_class c
       where c.relkind = 'S' and c.relnamespace = 'public'::regnamespace;`,
  ];
  await sql.raw(statements.join("\n")).execute(db);
}
