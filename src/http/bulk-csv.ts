// A bulk import's CSV file (issue 39; CONTRACT.md "Today's clients, second wave"), parsed by
// csv-parse: the header checked against the columns the import knows (a bad header is a 400
// naming the column), at most MAX_IMPORT_ROWS data rows, and each row read into the body
// POST /customers takes and checked by that route's own schema, so a row is refused for
// exactly what a request would be. The text is fed to the parser in chunks with a turn of
// the event loop between them: a 20 MiB file never holds the loop for its whole parse.
import { parse } from 'csv-parse';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { IMPORT_COLUMNS, MAX_IMPORT_ROWS, REQUIRED_COLUMNS, type SliceRow } from '../../actors/bulk-import.js';
import { DomainError, invalidInput, type FieldProblem } from '../../actors/errors.js';
import type { CustomerInput } from '../../actors/customer.js';
import type { Validator } from './validation.js';

/**
 * Characters fed to the parser between turns of the event loop: a few milliseconds of
 * parsing each (256 KiB were 30-40 ms, and a concurrent payment's p99 reached a second).
 */
const CHUNK_CHARS = 16 * 1024;
/** A row longer than this is no customer: the parser refuses it rather than buffer it. */
const MAX_RECORD_CHARS = 64 * 1024;

export interface CsvTable {
  header: readonly string[];
  /** The data rows, row 1 first. */
  rows: ReadonlyArray<readonly string[]>;
}

const fileProblem = (message: string, facts: Record<string, unknown> = {}): DomainError => invalidInput([{ field: 'file', message, ...facts }]);

/** The file's header and rows; not UTF-8, malformed, a bad header or over MAX_IMPORT_ROWS rows is a 400 naming `file` (and the column). */
export async function readCsv(bytes: Buffer): Promise<CsvTable> {
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    throw fileProblem('must be UTF-8 text');
  }
  const records = await parseRecords(text);
  const header = records.shift();
  if (header === undefined) throw fileProblem(`is empty: its first line is the header (${REQUIRED_COLUMNS.join(', ')} at least)`);
  checkHeader(header);
  return { header, rows: records };
}

function parseRecords(text: string): Promise<string[][]> {
  const parser = parse({ bom: true, relax_column_count: true, skip_empty_lines: true, max_record_size: MAX_RECORD_CHARS });
  const records: string[][] = [];
  const ended = new Promise<string[][]>((resolve, reject) => {
    parser.on('readable', () => {
      for (let record: string[] | null = parser.read() as string[] | null; record !== null; record = parser.read() as string[] | null) records.push(record);
      // The header is one record more than the rows.
      if (records.length > MAX_IMPORT_ROWS + 1) parser.destroy(fileProblem(`has more than ${MAX_IMPORT_ROWS} rows`));
    });
    parser.on('error', (err: unknown) => reject(err instanceof DomainError ? err : fileProblem(`is not valid CSV: ${err instanceof Error ? err.message : String(err)}`)));
    parser.on('end', () => resolve(records));
  });
  return feed(parser, text).then(() => ended);
}

async function feed(parser: ReturnType<typeof parse>, text: string): Promise<void> {
  for (let at = 0; at < text.length && !parser.destroyed; at += CHUNK_CHARS) {
    parser.write(text.slice(at, at + CHUNK_CHARS));
    await nextTurn();
  }
  if (!parser.destroyed) parser.end();
}

function checkHeader(header: readonly string[]): void {
  const problems: FieldProblem[] = [];
  const seen = new Set<string>();
  for (const column of header) {
    if (!IMPORT_COLUMNS.has(column)) problems.push({ field: 'file', column, message: `unknown column ${JSON.stringify(column)}; the columns are ${[...IMPORT_COLUMNS.keys()].join(', ')}` });
    else if (seen.has(column)) problems.push({ field: 'file', column, message: `column ${column} appears twice` });
    seen.add(column);
  }
  for (const column of REQUIRED_COLUMNS) if (!seen.has(column)) problems.push({ field: 'file', column, message: `the header lacks the required column ${column}` });
  if (problems.length > 0) throw invalidInput(problems);
}

/** Rows [from, from + count) of the table, each read as POST /customers' body and checked by its schema. */
export function sliceRows(table: CsvTable, from: number, count: number, body: Validator<CustomerInput>): SliceRow[] {
  const slice: SliceRow[] = [];
  for (let i = from; i < Math.min(table.rows.length, from + count); i++) slice.push(readRow(table.header, table.rows[i]!, i + 1, body));
  return slice;
}

function readRow(header: readonly string[], cells: readonly string[], row: number, body: Validator<CustomerInput>): SliceRow {
  if (cells.length !== header.length) return { row, problems: [{ field: 'row', message: `has ${cells.length} fields; the header has ${header.length}` }] };
  const value: Record<string, unknown> = {};
  header.forEach((column, i) => {
    const field = IMPORT_COLUMNS.get(column);
    const cell = cells[i]!;
    // An empty cell is a field not given, as a body without it.
    if (field !== undefined && cell !== '') setPath(value, field, cell);
  });
  const country = cells[header.indexOf('country')];
  if (value.customerType === 'BUSINESS' && country !== undefined && country !== '') setPath(value, 'businessInfo.country', country);
  try {
    return { row, input: body.parse(value) };
  } catch (err) {
    if (err instanceof DomainError && err.fields !== undefined) return { row, problems: err.fields };
    throw err;
  }
}

function setPath(target: Record<string, unknown>, path: string, value: string): void {
  const [head, tail] = path.split('.') as [string, string | undefined];
  if (tail === undefined) target[head] = value;
  else ((target[head] ??= {}) as Record<string, unknown>)[tail] = value;
}
