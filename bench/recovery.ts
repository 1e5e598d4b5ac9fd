// Kill and recover: the service as a child, loaded with customers (or an existing data
// directory), killed with SIGKILL, then started again on the same directory and timed until
// it answers /healthz. The service's own `recovery: snapshot at S, replayed N entries in M ms
// (the replay itself P ms, ...)` line gives the replay; the restart's `recovery: snapshot at S
// loaded: R records, ... (read X ms, restored Y ms)` line (from services before incremental
// snapshots, the last `snapshot at S: R records` line before the kill) gives the records it
// loads from the snapshot and how long that took.
//
//   npm run bench:recovery -- --customers 1000000 --no-snapshot   # the whole log replays
//   npm run bench:recovery -- --customers 1000000                 # the service's snapshots, then the log's tail
//   npm run bench:recovery -- --customers 20000 --snapshot-every-entries 15000
//   npm run bench:recovery -- --data /tmp/bench-scale-XXXX/db     # a directory kept by bench:scale --keep-data
//
// Acknowledged means durable: after the restart lastSeq must equal the lastSeq the service
// reported (all durable) just before the kill.
import { integerFlag } from './support/flags.js';
import { mkdtempSync, statSync, writeFileSync } from 'node:fs';
import { availableParallelism, cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { keep, processRss, removeOnExit, stop, runBench } from './support/children.js';
import { createCustomers, epochNow, health, loadFailures, messageOf, sandboxAuthorization, startServiceChild, type ServiceChild, showLastOutput, stopCleanly } from './support/service.js';
import { fmtInt, markdownTable } from './support/stats.js';
import { DATA_FILE, readFreeList } from '../src/engine/store.js';

/** Aims of issue 15: log entries replayed, and snapshot records read and restored, per second. */
const AIM_ENTRIES_PER_SECOND = 400_000;
const AIM_RECORDS_PER_SECOND = 300_000;
/** Recovering a large store can take minutes; past this the restart counts as failed. */
const READY_TIMEOUT_MS = 30 * 60 * 1000;
/** With --no-snapshot: thresholds no run reaches, so the service never snapshots on its own. */
const NEVER_ENTRIES = String(Number.MAX_SAFE_INTEGER);
const NEVER_SECONDS = String(365 * 24 * 60 * 60);
/** `recovery: snapshot at S, replayed N entries in M ms (the replay itself P ms, ...)` (engine.ts; older ones lack the parenthesis). */
const RECOVERY_LINE = /^recovery: snapshot at (\d+), replayed (\d+) entries in (\d+) ms(?: \(the replay itself (\d+) ms)?/;
/** `snapshot at S: R records, ...` (engine.ts before incremental snapshots: every snapshot held every record). */
const SNAPSHOT_LINE = /^snapshot at (\d+): (\d+) records/;
/** `recovery: snapshot at S loaded: R records, ... (read X ms, restored Y ms)` (engine.ts since incremental snapshots). */
const LOADED_LINE = /^recovery: snapshot at (\d+) loaded: (\d+) records.*\(read (\d+) ms, restored (\d+) ms\)/;

const { values: flags } = parseArgs({
  options: {
    customers: { type: 'string', default: '1000000' },
    data: { type: 'string' },
    'no-snapshot': { type: 'boolean', default: false },
    'snapshot-every-entries': { type: 'string' },
    connections: { type: 'string', default: '64' },
    'load-processes': { type: 'string', default: '1' },
    'service-node-options': { type: 'string', default: '' },
    'keep-data': { type: 'boolean', default: false },
    json: { type: 'string' },
    help: { type: 'boolean', default: false },
  },
  strict: true,
});

if (flags.help === true) {
  console.log(`usage: node dist/bench/recovery.js [options]
  --customers N                 customers to create before the kill (default 1000000; not with --data)
  --data DIR                    recover this data directory instead (kept; e.g. from bench:scale --keep-data)
  --no-snapshot                 the service never snapshots on its own: the restart replays the whole log
  --snapshot-every-entries N    the service's SNAPSHOT_EVERY_ENTRIES while loading (default: the service's own)
  --connections N               keep-alive connections while loading (default 64)
  --load-processes N            load generator processes (default 1)
  --service-node-options="..."  node flags for the service (both runs), e.g. "--max-old-space-size=8192"
  --keep-data                   keep the data directory the bench creates
  --json FILE                   also write the figures as JSON`);
  process.exit(0);
}


const customers = integerFlag('customers', flags.customers);
const connections = integerFlag('connections', flags.connections);
const loadProcesses = integerFlag('load-processes', flags['load-processes']);
const nodeOptions = flags['service-node-options'].split(' ').filter((a) => a !== '');
const snapshotEvery = flags['snapshot-every-entries'];
if (snapshotEvery !== undefined) integerFlag('snapshot-every-entries', snapshotEvery);
if (flags['no-snapshot'] && snapshotEvery !== undefined) throw new Error('--no-snapshot and --snapshot-every-entries exclude each other');
const env: Record<string, string> = flags['no-snapshot']
  ? { SNAPSHOT_EVERY_ENTRIES: NEVER_ENTRIES, SNAPSHOT_EVERY_SECONDS: NEVER_SECONDS }
  : snapshotEvery === undefined
    ? {}
    : { SNAPSHOT_EVERY_ENTRIES: snapshotEvery };

interface Recovery {
  snapshotSeq: number;
  replayed: number;
  /** The engine's own measure of open(): snapshot load and replay. */
  engineMs: number;
  /** The replay alone (absent from services before issue 15). */
  replayMs: number | undefined;
}

async function main(): Promise<string[]> {
  const failures: string[] = [];
  let dataDir: string;
  if (flags.data !== undefined) {
    dataDir = flags.data;
  } else {
    const parent = mkdtempSync(join(tmpdir(), 'bench-recovery-'));
    if (flags['keep-data']) keep(parent);
    else removeOnExit(parent);
    dataDir = join(parent, 'db');
  }
  console.log(
    `# Recovery: Node ${process.version}, ${cpus()[0]?.model ?? 'unknown CPU'}, ${availableParallelism()} cores; ` +
      (flags.data !== undefined ? `data directory ${dataDir}` : `${fmtInt(customers)} customers`) +
      (flags['no-snapshot'] ? '; snapshots off' : snapshotEvery !== undefined ? `; SNAPSHOT_EVERY_ENTRIES=${snapshotEvery}` : '') +
      (nodeOptions.length > 0 ? `; service node options: ${nodeOptions.join(' ')}` : '') +
      '\n',
  );

  let service: ServiceChild | undefined;
  /** The durable lastSeq just before the kill (unknown for --data). */
  let killedAt: number | undefined;
  let snapshotRecords: number | undefined;
  let snapshotSeq: number | undefined;
  /** Reading and restoring the snapshot, as the restarted service reports it. */
  let snapshotLoadMs: number | undefined;
  let recovery: Recovery | undefined;
  let readyMs = 0;
  let recoveredSeq = 0;
  let rssAfter: number | undefined;
  let heapAfter: number | undefined;
  let anonRssAfter: number | undefined;
  try {
    if (flags.data === undefined) {
      service = await startServiceChild({
        dataDir,
        nodeOptions,
        env,
        onLine: (line) => {
          const m = SNAPSHOT_LINE.exec(messageOf(line));
          if (m !== null) {
            snapshotSeq = Number(m[1]);
            snapshotRecords = Number(m[2]);
          }
        },
      });
      process.stderr.write(`creating ${fmtInt(customers)} customers ...\n`);
      const r = await createCustomers(service, sandboxAuthorization(dataDir), customers, { connections, processes: loadProcesses });
      const problems = loadFailures(r);
      if (problems.length > 0) throw new Error(`loading failed: ${problems.join('; ')}`);
      const h = await health(service);
      if (h.durableSeq !== h.lastSeq) throw new Error(`the log is not durable before the kill (durableSeq ${h.durableSeq} of ${h.lastSeq})`);
      killedAt = h.lastSeq;
      process.stderr.write(`killing the service (SIGKILL) at entry ${fmtInt(killedAt)} ...\n`);
      await stop(service.child, 'SIGKILL');
      service = undefined;
    }

    const dataFileBytes = statSync(join(dataDir, DATA_FILE)).size;
    const free = readFreeList(dataDir);
    const freePages = free.runs.reduce((sum, run) => sum + run.count, 0);

    process.stderr.write('restarting on the same data directory ...\n');
    const spawnedAt = epochNow();
    service = await startServiceChild({
      dataDir,
      nodeOptions,
      env,
      readyTimeoutMs: READY_TIMEOUT_MS,
      onLine: (line) => {
        const message = messageOf(line);
        const m = RECOVERY_LINE.exec(message);
        if (m !== null) recovery = { snapshotSeq: Number(m[1]), replayed: Number(m[2]), engineMs: Number(m[3]), replayMs: m[4] === undefined ? undefined : Number(m[4]) };
        const loaded = LOADED_LINE.exec(message);
        if (loaded !== null) {
          snapshotSeq = Number(loaded[1]);
          snapshotRecords = Number(loaded[2]);
          snapshotLoadMs = Number(loaded[3]) + Number(loaded[4]);
        }
      },
    });
    readyMs = epochNow() - spawnedAt;
    const h = await health(service);
    recoveredSeq = h.lastSeq;
    rssAfter = h.memory?.rss;
    heapAfter = h.memory?.heapUsed;
    anonRssAfter = processRss(service.child.pid)?.anon;
    if (killedAt !== undefined && recoveredSeq !== killedAt) failures.push(`recovered to entry ${recoveredSeq}, but ${killedAt} were durable before the kill`);

    const replayed = recovery?.replayed ?? 0;
    const replayMs = recovery?.replayMs;
    const entriesPerSecond = replayMs !== undefined && replayMs > 0 ? replayed / (replayMs / 1000) : undefined;
    const fromSnapshot = recovery !== undefined && recovery.snapshotSeq > 0;
    const loadedRecords = fromSnapshot && snapshotSeq === recovery?.snapshotSeq ? snapshotRecords : undefined;
    const recordsPerSecond = loadedRecords !== undefined && snapshotLoadMs !== undefined && snapshotLoadMs > 0 ? loadedRecords / (snapshotLoadMs / 1000) : undefined;
    const pageMiB = free.pageSize / (1024 * 1024);
    console.log(
      markdownTable(
        ['measure', 'value'],
        [
          ['log entries written (lastSeq)', fmtInt(recoveredSeq)],
          ['snapshot loaded at seq', fromSnapshot ? fmtInt(recovery!.snapshotSeq) : 'none'],
          ['records in that snapshot', loadedRecords !== undefined ? fmtInt(loadedRecords) : fromSnapshot ? 'n/a (not seen)' : '0'],
          ['snapshot read and restored', snapshotLoadMs === undefined || !fromSnapshot ? 'n/a' : `${fmtInt(snapshotLoadMs)} ms`],
          ['snapshot load rate', recordsPerSecond === undefined ? 'n/a' : `${fmtInt(recordsPerSecond)} records/s`],
          ['log entries replayed', fmtInt(replayed)],
          ['replay (the log tail alone)', replayMs === undefined ? 'n/a' : `${fmtInt(replayMs)} ms`],
          ['replay rate', entriesPerSecond === undefined ? 'n/a' : `${fmtInt(entriesPerSecond)} entries/s`],
          ['engine recovery (open: snapshot, replay, invariants)', recovery === undefined ? 'n/a' : `${fmtInt(recovery.engineMs)} ms`],
          ['spawn to first 200 from /healthz', `${fmtInt(readyMs)} ms`],
          ['data.mdb', `${(dataFileBytes / (1024 * 1024)).toFixed(1)} MiB (${fmtInt(free.lastPage + 1)} pages of ${free.pageSize} B, ${fmtInt(freePages)} free = ${(freePages * pageMiB).toFixed(1)} MiB)`],
          ['data.mdb bytes per log entry written', recoveredSeq > 0 ? fmtInt(dataFileBytes / recoveredSeq) : 'n/a'],
          [
            'RSS / anon RSS / heap used after recovery',
            [rssAfter, anonRssAfter, heapAfter].map((bytes) => (bytes === undefined ? 'n/a' : fmtInt(bytes / (1024 * 1024)))).join(' / ') + ' MiB',
          ],
        ],
        [false, true],
      ),
    );
    console.log('');
    console.log('- replay rate = entries replayed / the replay\'s own time; snapshot load rate = records / (reading + restoring them); engine recovery adds the invariant check; spawn to 200 adds Node\'s start and opening HTTP');
    console.log('- bytes per log entry = data.mdb / entries written: the log\'s own cost per entry when nothing was snapshotted (--no-snapshot), otherwise snapshot pages and free pages are in it too');
    if (recovery === undefined) {
      console.log('- the service reported no recovery line: there was nothing to replay and no snapshot');
    } else if (entriesPerSecond !== undefined && replayed > 0) {
      console.log(`- replay: ${fmtInt(entriesPerSecond)} entries/s — aim ≥ ${fmtInt(AIM_ENTRIES_PER_SECOND)}: ${entriesPerSecond >= AIM_ENTRIES_PER_SECOND ? 'MET' : 'NOT MET'}`);
    }
    if (recordsPerSecond !== undefined) {
      console.log(`- snapshot load: ${fmtInt(recordsPerSecond)} records/s — aim ≥ ${fmtInt(AIM_RECORDS_PER_SECOND)}: ${recordsPerSecond >= AIM_RECORDS_PER_SECOND ? 'MET' : 'NOT MET'}`);
    }
    if (flags['keep-data'] || flags.data !== undefined) console.log(`- data directory kept: ${dataDir}`);
    if (flags.json !== undefined) {
      writeFileSync(
        flags.json,
        JSON.stringify(
          { dataDir: flags.data, customers: flags.data === undefined ? customers : undefined, noSnapshot: flags['no-snapshot'], killedAt, recoveredSeq, recovery, snapshotRecords, snapshotLoadMs, recordsPerSecond, entriesPerSecond, readyMs, dataFileBytes, pageSize: free.pageSize, lastPage: free.lastPage, freePages, rssAfter, anonRssAfter, heapAfter, failures },
          null,
          2,
        ),
      );
    }
  } catch (err) {
    showLastOutput(service);
    throw err;
  } finally {
    // A directory given with --data is left as it was recovered (no final snapshot), so it can be recovered again.
    if (service !== undefined && flags.data !== undefined) await stop(service.child, 'SIGKILL');
    else await stopCleanly(service, failures, 300_000);
  }
  return failures;
}

runBench('recovery bench', main);
