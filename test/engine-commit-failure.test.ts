// A failed lmdb commit stops the process (exit 70, `log commit failed`) and nothing after
// it is acknowledged. The engine runs in a child process with an injected failing store.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { tempDir } from './support/counter-machine.js';

const script = fileURLToPath(new URL('./support/commit-failure.js', import.meta.url));

describe('engine commit failure', () => {
  it('stops the process with `log commit failed` and acknowledges nothing after the failure', () => {
    const dir = tempDir();
    const child = spawnSync(process.execPath, [script, dir], { encoding: 'utf8', timeout: 30_000 });
    assert.equal(child.status, 70, `exit ${child.status}\nstdout:\n${child.stdout}\nstderr:\n${child.stderr}`);
    assert.match(child.stderr, /fatal: log commit failed: Error: injected: MDB_MAP_FULL during commit/);
    assert.deepEqual(child.stdout.trim().split('\n'), ['acknowledged 1', 'acknowledged 2', 'acknowledged 3']);
    rmSync(dir, { recursive: true, force: true });
  });
});
