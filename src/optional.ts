// The one spread helper of exactOptionalPropertyTypes: an optional property is left out, never
// set to undefined. Its own module so that the settings, the single node and a cluster node
// use it without importing each other.

/** `{[key]: value}` when there is a value: optional properties stay absent rather than undefined (exactOptionalPropertyTypes). */
export function optional<K extends string, V>(key: K, value: V | undefined): { [P in K]?: V } {
  return (value === undefined ? {} : { [key]: value }) as { [P in K]?: V };
}
