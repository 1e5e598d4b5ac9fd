// Reading the import graph of the sources, for the tests that hold its shape (the domain
// boundary, no import circles).
import { readdirSync } from 'node:fs';

/** Every .ts file under `dir`, as paths relative to it. */
export function sourcesUnder(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' }).filter((name) => name.endsWith('.ts'));
}

/** Module specifiers of every static import (type-only ones included), re-export and dynamic import in `source`. */
export function specifiers(source: string): string[] {
  const found: string[] = [];
  for (const pattern of [/\b(?:import|export)\s[^;]*?\sfrom\s*['"]([^'"]+)['"]/g, /\bimport\s*['"]([^'"]+)['"]/g, /\bimport\(\s*['"]([^'"]+)['"]\s*\)/g]) {
    for (const match of source.matchAll(pattern)) found.push(match[1]!);
  }
  return found;
}
