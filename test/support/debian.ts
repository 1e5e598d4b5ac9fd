// System packages a suite needs (chromium, nats-server): installed with Debian's apt-get
// when missing and the suite runs as root (as CI does), else a failure that names the
// command to run. A suite never skips for want of one.
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';

/** Makes sure `binary` exists, installing `pkg` when it is missing and we may; `purpose` says who needs it. */
export function ensureDebianPackage(pkg: string, binary: string, purpose: string): void {
  if (existsSync(binary)) return;
  if (process.getuid?.() !== 0) throw new Error(`${binary} is missing: install it with "apt-get install -y ${pkg}" (${purpose})`);
  const apt = (args: string[]): void => {
    execFileSync('apt-get', args, { stdio: 'inherit', env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' }, timeout: 15 * 60_000 });
  };
  try {
    apt(['install', '-y', pkg]);
  } catch {
    // A fresh machine may not have read its package lists yet.
    apt(['update']);
    apt(['install', '-y', pkg]);
  }
  if (!existsSync(binary)) throw new Error(`apt-get installed ${pkg}, but ${binary} is still missing`);
}
