// The production OTP mail as a test reads it: without SMTP_URL the mail effect writes .eml
// files under <data dir>/outbox/, and the code is the indented line of digits.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { TestService } from './service.js';

/** The newest OTP mailed to `to` once more than `seen` have arrived, waiting for the mail effect to write it. */
export async function mailedCode(svc: TestService, to: string, seen: number): Promise<string> {
  const dir = join(svc.dataDir, 'outbox');
  for (let i = 0; i < 200; i++) {
    let files: string[] = [];
    try {
      files = readdirSync(dir).filter((f) => f.endsWith('.eml')).sort();
    } catch {
      // not created yet
    }
    const mails = files.map((f) => readFileSync(join(dir, f), 'utf8')).filter((m) => m.includes(`To: ${to}`));
    if (mails.length > seen) {
      const code = /^ {4}(\d+)$/m.exec(mails.at(-1)!)?.[1];
      assert.ok(code, 'the mail carries a code');
      return code;
    }
    await new Promise((resolve) => setImmediate(resolve));
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  throw new Error(`no OTP mail for ${to}`);
}
