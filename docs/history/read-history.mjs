// Reads collscope's Parquet history with DuckDB's Node API alone: no collscope code.
import { DuckDBInstance } from '@duckdb/node-api';
const base = process.argv[2] ?? '.run/history';
const db = await DuckDBInstance.create(':memory:');
const c = await db.connect();
await c.run("SET TimeZone = 'UTC'");
const r = await c.runAndReadAll(`
  SELECT dt, hour, communicator, count(*) AS windows,
         count(*) FILTER (WHERE verdict <> 'NONE') AS with_culprit,
         round(max(max_wait_mean_us), 1) AS max_wait_us
  FROM read_parquet('${base}/attributions/dt=*/hour=*/*.parquet', hive_partitioning = true)
  GROUP BY ALL ORDER BY ALL`);
console.table(r.getRowObjectsJson());
const v = await c.runAndReadAll('SELECT version() AS duckdb');
console.log(v.getRowObjectsJson()[0]);
