// The dashboard's files (compiled from src/dashboard by the build), read once at start and
// served from memory at /dashboard/ with headers that keep the page to itself: a strict
// Content-Security-Policy (scripts and styles from this origin only, no inline script,
// requests only to this origin), no framing, no sniffing, no referrer.
import { readdirSync, readFileSync } from 'node:fs';
import { extname } from 'node:path';
import { DASHBOARD_DIR } from '../built-layout.js';

export interface DashboardFile {
  body: string;
  contentType: string;
}

const CONTENT_TYPES: Readonly<Record<string, string>> = {
  '.html': 'text/html; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
};

export const DASHBOARD_HEADERS: ReadonlyArray<[string, string]> = [
  [
    'Content-Security-Policy',
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  ],
  ['X-Frame-Options', 'DENY'],
  ['X-Content-Type-Options', 'nosniff'],
  ['Referrer-Policy', 'no-referrer'],
  ['Cache-Control', 'no-cache'],
];

/** Every .html, .css and .js file of the built dashboard, by path (`pages/overview.js`); source maps and the rest stay private. */
export function loadDashboard(dir = DASHBOARD_DIR): ReadonlyMap<string, DashboardFile> {
  const files = new Map<string, DashboardFile>();
  for (const name of readdirSync(dir, { recursive: true, encoding: 'utf8' })) {
    const contentType = CONTENT_TYPES[extname(name)];
    if (contentType !== undefined) files.set(name, { body: readFileSync(`${dir}/${name}`, 'utf8'), contentType });
  }
  if (!files.has('index.html')) throw new Error(`${dir} holds no index.html: run npm run build`);
  return files;
}
