import { sql, type Kysely, type RawBuilder } from "kysely";
import type { Database } from "./database.js";
import { quoteLiteral } from "./quote-ident.js";

/** The command that regenerates docs/schema.sql. */
export const SCHEMA_DUMP_COMMAND = "npx tsx src/storage/write-schema-dump.ts";

interface ColumnRow {
  table_name: string;
  column_name: string;
  data_type: string;
  not_null: boolean;
  default_expr: string | null;
  identity: string;
  generated: string;
  comment: string | null;
}

interface NamedDefinition {
  table_name: string;
  name: string;
  definition: string;
}

/**
 * A deterministic, reviewable description of the `public` schema, read from
 * pg_catalog so that it is the same on Postgres 15 and on PGlite and does not
 * depend on pg_dump's version: sequences, tables (columns, comments,
 * constraints, indexes, triggers), views and functions, each sorted by name.
 */
export async function dumpSchema(db: Kysely<Database>): Promise<string> {
  const [tables, columns, constraints, indexes, sequences, views, functions, triggers] = await Promise.all([
    rows<{ table_name: string; comment: string | null }>(
      db,
      sql`
        select c.relname as table_name, obj_description(c.oid, 'pg_class') as comment
        from pg_class c join pg_namespace n on n.oid = c.relnamespace
        where n.nspname = 'public' and c.relkind in ('r', 'p')
        order by c.relname`,
    ),
    rows<ColumnRow>(
      db,
      sql`
        select c.relname as table_name, a.attname as column_name,
               format_type(a.atttypid, a.atttypmod) as data_type, a.attnotnull as not_null,
               pg_get_expr(d.adbin, d.adrelid) as default_expr,
               a.attidentity::text as identity, a.attgenerated::text as generated,
               col_description(c.oid, a.attnum) as comment
        from pg_class c
        join pg_namespace n on n.oid = c.relnamespace
        join pg_attribute a on a.attrelid = c.oid and a.attnum > 0 and not a.attisdropped
        left join pg_attrdef d on d.adrelid = c.oid and d.adnum = a.attnum
        where n.nspname = 'public' and c.relkind in ('r', 'p')
        order by c.relname, a.attnum`,
    ),
    // NOT NULL is shown on the column: Postgres 18 (PGlite) also lists it as constraint type 'n'.
    rows<NamedDefinition>(
      db,
      sql`
        select c.relname as table_name, con.conname as name, pg_get_constraintdef(con.oid) as definition
        from pg_constraint con
        join pg_class c on c.oid = con.conrelid
        join pg_namespace n on n.oid = c.relnamespace
        where n.nspname = 'public' and con.contype in ('p', 'u', 'f', 'c', 'x')
        order by c.relname, con.conname`,
    ),
    // Indexes that back a constraint are described by the constraint.
    rows<NamedDefinition>(
      db,
      sql`
        select t.relname as table_name, i.relname as name, pg_get_indexdef(i.oid) as definition
        from pg_index x
        join pg_class i on i.oid = x.indexrelid
        join pg_class t on t.oid = x.indrelid
        join pg_namespace n on n.oid = t.relnamespace
        where n.nspname = 'public'
          and not exists (
            select 1 from pg_constraint con
            where con.conindid = x.indexrelid and con.conrelid = x.indrelid and con.contype in ('p', 'u', 'x'))
        order by t.relname, i.relname`,
    ),
    rows<NamedDefinition>(
      db,
      sql`
        select coalesce(t.relname, '') as table_name, s.relname as name,
               'AS ' || format_type(q.seqtypid, null)
                 || coalesce(' OWNED BY public.' || t.relname || '.' || a.attname, '') as definition
        from pg_sequence q
        join pg_class s on s.oid = q.seqrelid
        join pg_namespace n on n.oid = s.relnamespace
        left join pg_depend d on d.classid = 'pg_class'::regclass and d.objid = s.oid
          and d.refclassid = 'pg_class'::regclass and d.deptype in ('a', 'i')
        left join pg_class t on t.oid = d.refobjid
        left join pg_attribute a on a.attrelid = d.refobjid and a.attnum = d.refobjsubid
        where n.nspname = 'public'
        order by s.relname`,
    ),
    rows<NamedDefinition>(
      db,
      sql`
        select c.relname as table_name, c.relname as name, pg_get_viewdef(c.oid) as definition
        from pg_class c join pg_namespace n on n.oid = c.relnamespace
        where n.nspname = 'public' and c.relkind in ('v', 'm')
        order by c.relname`,
    ),
    rows<NamedDefinition>(
      db,
      sql`
        select '' as table_name, p.proname || '(' || pg_get_function_identity_arguments(p.oid) || ')' as name,
               pg_get_functiondef(p.oid) as definition
        from pg_proc p join pg_namespace n on n.oid = p.pronamespace
        where n.nspname = 'public'
        order by 2`,
    ),
    rows<NamedDefinition>(
      db,
      sql`
        select c.relname as table_name, t.tgname as name, pg_get_triggerdef(t.oid) as definition
        from pg_trigger t
        join pg_class c on c.oid = t.tgrelid
        join pg_namespace n on n.oid = c.relnamespace
        where n.nspname = 'public' and not t.tgisinternal
        order by c.relname, t.tgname`,
    ),
  ]);

  const out: string[] = [
    "-- Tributary metadata schema, as migrated from migrations/.",
    `-- Generated by \`${SCHEMA_DUMP_COMMAND}\`: do not edit by hand.`,
    "-- A test diffs this file against a migrated Postgres and a migrated PGlite.",
    "",
  ];
  for (const seq of sequences) out.push(`CREATE SEQUENCE public.${seq.name} ${seq.definition};`);
  if (sequences.length > 0) out.push("");
  for (const table of tables) {
    const name = table.table_name;
    const cols = columns.filter((c) => c.table_name === name);
    out.push(`CREATE TABLE public.${name} (`);
    out.push(cols.map((c) => `    ${columnDefinition(c)}`).join(",\n"));
    out.push(");");
    if (table.comment) out.push(`COMMENT ON TABLE public.${name} IS ${quoteLiteral(table.comment)};`);
    for (const c of cols) {
      if (c.comment) out.push(`COMMENT ON COLUMN public.${name}.${c.column_name} IS ${quoteLiteral(c.comment)};`);
    }
    for (const con of constraints.filter((x) => x.table_name === name)) {
      out.push(`ALTER TABLE public.${name} ADD CONSTRAINT ${con.name} ${con.definition};`);
    }
    for (const index of indexes.filter((x) => x.table_name === name)) out.push(`${index.definition};`);
    for (const trigger of triggers.filter((x) => x.table_name === name)) out.push(`${trigger.definition};`);
    out.push("");
  }
  for (const view of views) out.push(`CREATE VIEW public.${view.name} AS\n${view.definition.trim()}\n`);
  for (const fn of functions) out.push(`${fn.definition.trim()};\n`);
  return `${out.join("\n").trimEnd()}\n`;
}

function columnDefinition(c: ColumnRow): string {
  let text = `${c.column_name} ${c.data_type}`;
  if (c.identity === "a") text += " GENERATED ALWAYS AS IDENTITY";
  else if (c.identity === "d") text += " GENERATED BY DEFAULT AS IDENTITY";
  else if (c.generated === "s" && c.default_expr) text += ` GENERATED ALWAYS AS (${c.default_expr}) STORED`;
  else if (c.default_expr) text += ` DEFAULT ${c.default_expr}`;
  if (c.not_null) text += " NOT NULL";
  return text;
}

async function rows<R>(db: Kysely<Database>, query: RawBuilder<R>): Promise<R[]> {
  return (await query.execute(db)).rows;
}
