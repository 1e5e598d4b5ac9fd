// Multipart bodies as a browser's fetch sends them, and the smallest files of the kinds
// documents take, for tests of the routes that take files.
/** The smallest files of each kind whose signatures file-type knows. */
export const PNG = Buffer.from('89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c4890000000d49444154789c63f8ffff3f0005fe02fea7d6a4a60000000049454e44ae426082', 'hex');
export const PDF = Buffer.from('%PDF-1.4\n1 0 obj<<>>endobj\ntrailer<<>>\n%%EOF\n');
export const JPEG = Buffer.from('ffd8ffe000104a46494600010100000100010000ffd9', 'hex');

/** A multipart/form-data body as fetch would send it: its bytes and content type. */
export async function formBody(fields: Record<string, string>, file?: { bytes: Buffer; name: string; type: string }): Promise<{ raw: Uint8Array; contentType: string }> {
  const form = new FormData();
  for (const [name, value] of Object.entries(fields)) form.append(name, value);
  if (file !== undefined) form.append('file', new Blob([new Uint8Array(file.bytes)], { type: file.type }), file.name);
  const request = new Request('http://form.invalid/', { method: 'POST', body: form });
  return { raw: new Uint8Array(await request.arrayBuffer()), contentType: request.headers.get('content-type')! };
}

