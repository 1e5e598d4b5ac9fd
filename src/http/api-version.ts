// The API's version, the first segment of every path. A leaf of the import graph: the
// settings (src/config.ts) name it in the base URL, below everything that serves it.
export const API_VERSION = '2025-10-13';
