// multipart/form-data request bodies (a document's upload), parsed by busboy from the bytes
// the front has read whole (bounded by the route's `multipart.maxBytes`), and the file's
// type told from its content by file-type: never from its name or the part's declared type,
// which the client chooses freely.
import busboy from 'busboy';
import { fileTypeFromBuffer } from 'file-type';
import { invalidField } from '../../actors/errors.js';
import { TEXT_CHARACTER } from './validation.js';

/** A document's file may be at most 10 MiB (CONTRACT.md "Today's clients, second wave"). */
export const MAX_FILE_BYTES = 10 * 1024 * 1024;
/** What a form carries beside its file: boundaries, part headers and a few short text fields. */
export const FORM_OVERHEAD_BYTES = 64 * 1024;
/** A text field's value at most, in bytes. */
const MAX_FIELD_BYTES = 1024;
const MAX_FILE_NAME = 255;
const FILE_NAME = new RegExp(`^${TEXT_CHARACTER}{1,${MAX_FILE_NAME}}$`);

/** The body of a multipart route as its handler gets it: the bytes, parsed in the handler (before its command). */
export interface MultipartBody {
  contentType: string;
  bytes: Buffer;
}

export interface FormFile {
  bytes: Buffer;
  /** As the client named it (a path is cut to its last segment). */
  fileName: string;
}

export interface ParsedForm {
  fields: Record<string, string>;
  file?: FormFile;
}

/** The form's text fields and its one file part, `file`; a malformed form, an unknown file part or a file over `maxFileBytes` is a 400. */
export function parseForm(body: MultipartBody, maxFileBytes = MAX_FILE_BYTES): Promise<ParsedForm> {
  let parser: busboy.Busboy;
  try {
    parser = busboy({ headers: { 'content-type': body.contentType }, limits: { files: 1, fileSize: maxFileBytes, fields: 20, fieldSize: MAX_FIELD_BYTES, parts: 21 } });
  } catch (err) {
    return Promise.reject(invalidField('body', `not a multipart/form-data body: ${err instanceof Error ? err.message : String(err)}`));
  }
  return new Promise((resolve, reject) => {
    const form: ParsedForm = { fields: {} };
    let refusal: Error | undefined;
    const refuse = (field: string, message: string): void => {
      refusal ??= invalidField(field, message);
    };
    parser.on('field', (name, value, info) => {
      if (info.valueTruncated) refuse(name, `longer than ${MAX_FIELD_BYTES} bytes`);
      else if (name in form.fields) refuse(name, 'sent more than once');
      else form.fields[name] = value;
    });
    parser.on('file', (name, stream, info) => {
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('close', () => {
        if (name !== 'file') return refuse(name, 'the only file part is `file`');
        if ((stream as unknown as { truncated: boolean }).truncated) return refuse('file', `larger than ${maxFileBytes} bytes`);
        form.file = { bytes: Buffer.concat(chunks), fileName: (info.filename ?? '').split(/[\\/]/).pop() ?? '' };
      });
    });
    parser.on('filesLimit', () => refuse('file', 'one file per request'));
    parser.on('fieldsLimit', () => refuse('body', 'too many fields'));
    parser.on('partsLimit', () => refuse('body', 'too many parts'));
    parser.on('error', (err: unknown) => reject(invalidField('body', `malformed multipart/form-data: ${err instanceof Error ? err.message : String(err)}`)));
    parser.on('close', () => (refusal === undefined ? resolve(form) : reject(refusal)));
    parser.end(body.bytes);
  });
}

/** The kinds of file a document may be, by content. */
export type DocumentFileType = 'application/pdf' | 'image/jpeg' | 'image/png';
const DOCUMENT_FILE_TYPES: ReadonlySet<string> = new Set<DocumentFileType>(['application/pdf', 'image/jpeg', 'image/png']);

/** The file's type by its bytes, and its name checked; anything but a non-empty PDF, JPEG or PNG is a 400 naming `file`. */
export async function documentFile(file: FormFile | undefined): Promise<{ mediaType: DocumentFileType; fileName: string; bytes: Buffer }> {
  if (file === undefined || file.bytes.length === 0) throw invalidField('file', 'required: the document as a file part named `file`');
  if (!FILE_NAME.test(file.fileName)) throw invalidField('file', `its file name must be 1 to ${MAX_FILE_NAME} characters without control characters`);
  const sniffed = await fileTypeFromBuffer(file.bytes);
  if (sniffed === undefined || !DOCUMENT_FILE_TYPES.has(sniffed.mime)) {
    throw invalidField('file', `must be a PDF, JPEG or PNG by its content (this one is ${sniffed?.mime ?? 'of no type we recognise'})`);
  }
  return { mediaType: sniffed.mime as DocumentFileType, fileName: file.fileName, bytes: file.bytes };
}
