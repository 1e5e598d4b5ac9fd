// System packages a suite needs (chromium, nats-server): installed with Debian's apt-get
// when missing and the suite runs as root (as CI does), else a failure that names the
// command to run. A suite never skips for want of one. The suite runner (scripts/test.ts)
// installs what its suites need once, up front, by running this module as a command, so
// the download overlaps the suites that need nothing and no two apt-gets meet dpkg's lock.
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/** A Debian package and the binary that tells it is installed. */
export interface DebianPackage {
  pkg: string;
  binary: string;
}

export const CHROMIUM_PACKAGE: DebianPackage = { pkg: 'chromium', binary: '/usr/bin/chromium' };
export const NATS_SERVER_PACKAGE: DebianPackage = { pkg: 'nats-server', binary: '/usr/sbin/nats-server' };

/** Makes sure every binary of `packages` exists, installing the missing packages in one apt-get when we may; `purpose` says who needs them. */
export function ensureDebianPackages(packages: readonly DebianPackage[], purpose: string): void {
  const missing = packages.filter((p) => !existsSync(p.binary));
  if (missing.length === 0) return;
  const names = missing.map((p) => p.pkg);
  if (process.getuid?.() !== 0) throw new Error(`${missing.map((p) => p.binary).join(', ')} missing: install with "apt-get install -y ${names.join(' ')}" (${purpose})`);
  const apt = (args: string[]): void => {
    execFileSync('apt-get', args, { stdio: 'inherit', env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' }, timeout: 15 * 60_000 });
  };
  try {
    apt(['install', '-y', '--no-install-recommends', ...names]);
  } catch {
    // A fresh machine may not have read its package lists yet.
    apt(['update']);
    apt(['install', '-y', '--no-install-recommends', ...names]);
  }
  for (const p of missing) if (!existsSync(p.binary)) throw new Error(`apt-get installed ${p.pkg}, but ${p.binary} is still missing`);
}

// As a command: `node debian.js PKG=BINARY ...` (the suite runner's up-front install).
if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const packages = process.argv.slice(2).map((arg) => {
    const [pkg = '', binary = ''] = arg.split('=');
    return { pkg, binary };
  });
  try {
    ensureDebianPackages(packages, 'the suites that need them');
  } catch (err) {
    process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
    process.exitCode = 1;
  }
}
